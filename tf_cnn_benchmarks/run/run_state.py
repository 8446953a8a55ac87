"""What one run threads through every call, as one object.

The driver makes it once the run's config is resolved and hands it to the
engine; the engine hands it to the step loop. ``rc`` is replaced as the run
learns more (the runtime's begin, the real data's size); everything else is
fixed for the run.
"""

import dataclasses
import typing

from tf_cnn_benchmarks import contracts
from tf_cnn_benchmarks.liveness import watchdog
from tf_cnn_benchmarks.run import mlperf_log
from tf_cnn_benchmarks.run import report
from tf_cnn_benchmarks.run import timing
from tf_cnn_benchmarks.run.run_result import RunResult

if typing.TYPE_CHECKING:  # run_config loads TensorFlow; this module need not
  from tf_cnn_benchmarks.config import run_config  # pylint: disable=g-bad-import-order


@dataclasses.dataclass
class RunState:
  rc: 'run_config.RunConfig'
  runtime: contracts.Runtime
  reporter: report.Reporter
  # The run's watchdog: phases, stop requests, stall checks.
  watch: watchdog.Watchdog
  times: timing.StepTimes
  # What the run returns and records; filled as the run goes.
  result: RunResult
  # Told of the run's milestones (its start, each step, each evaluation):
  # the MLPerf log of --ml_perf_compliance_logging (run/mlperf_log.py), or
  # nothing.
  milestones: object = dataclasses.field(
      default_factory=lambda: mlperf_log.NO_LOG)

  @property
  def params(self):
    return self.rc.params
