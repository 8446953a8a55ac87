"""What one run returns (driver.run) and records: TensorFlow-free, so that a
run stopped while TensorFlow loads is recorded too (liveness/early_signals.py).
"""

import dataclasses
from typing import List, Optional

from tf_cnn_benchmarks.run import timing


@dataclasses.dataclass
class RunResult:
  # ok | target_not_reached | failed | interrupted | stalled | unreachable
  status: str
  exit_code: int
  times: Optional[timing.StepTimes] = None
  images_per_sec: float = 0.0
  top_1_accuracy: Optional[float] = None
  top_5_accuracy: Optional[float] = None
  num_eval_examples: int = 0
  failure: Optional[dict] = None
  record_path: Optional[str] = None
  record: Optional[dict] = None
  checkpoint_path: Optional[str] = None
  # Real-data training only: the input pipeline's rate alone, and whether
  # it was the bottleneck.
  input_images_per_sec: Optional[float] = None
  # First timed step whose loss was NaN or infinite (None: never).
  diverged_at_step: Optional[int] = None
  input_bound: Optional[bool] = None
  # Evaluations of the run (evaluation.Evaluation.as_dict()), in order.
  evaluations: List[dict] = dataclasses.field(default_factory=list)
  # The timed step after which --stop_at_top_1_accuracy ended training.
  stopped_at_step: Optional[int] = None
  # Where an evaluation reached --stop_at_top_1_accuracy
  # (evaluation.Target: time, epochs and steps to target), else None.
  target: Optional[object] = None
  # --ml_perf_compliance_logging: the MLPerf log's file (run/mlperf_log.py).
  mlperf_log_path: Optional[str] = None
  # Model FLOP utilisation of the timed loop (mfu.Utilisation).
  utilisation: Optional[object] = None
  # The timed loop's share of the machine other processes used
  # (measure/cpu_share.py), and this process's CPU seconds per image.
  other_cpu_share: Optional[float] = None
  cpu_seconds_per_image: Optional[float] = None
  # Cluster peers that failed while this task carried on (asynchronous
  # training): failure dicts, first first.
  peer_failures: List[dict] = dataclasses.field(default_factory=list)
  # Cluster steps this task ran again after TensorFlow refused them as copies
  # (cluster/task/step_repeats.py): [{step, refused: [first line of each
  # error]}].
  repeated_steps: List[dict] = dataclasses.field(default_factory=list)
  # Seconds of each phase of the run (liveness/phases.py).
  phases: dict = dataclasses.field(default_factory=dict)
  # Workers the chief found slower than the others
  # (cluster/watch/stragglers.py).
  stragglers: List[dict] = dataclasses.field(default_factory=list)
  # This process's peak memory (measure/memory.Memory), taken as the run
  # is recorded.
  memory: Optional[object] = None
