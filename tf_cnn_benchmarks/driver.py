"""One benchmark run in one process: build, initialise, warm up, time, report.

``run(params)`` is the library entry point (tests and notebooks call it and
get a RunResult back); benchmark_main wraps it for the command line.
"""

import dataclasses
import datetime
import math
import os
import signal
import threading
import time
import traceback
import uuid
from typing import List, Optional

from google.protobuf import text_format
import tensorflow as tf

import preprocessing
from results import atomic_files
from tf_cnn_benchmarks import batch_group
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks import local_runtime
from tf_cnn_benchmarks import model_graph
from tf_cnn_benchmarks import record
from tf_cnn_benchmarks import report
from tf_cnn_benchmarks import run_config
from tf_cnn_benchmarks import timing
from tf_cnn_benchmarks.measure import mfu

tf1 = tf.compat.v1


@dataclasses.dataclass
class RunResult:
  status: str  # ok | failed | interrupted | stalled | unreachable
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
  # Model FLOP utilisation of the timed loop (mfu.Utilisation).
  utilisation: Optional[object] = None
  # Cluster peers that failed while this task carried on (asynchronous
  # training): failure dicts, first first.
  peer_failures: List[dict] = dataclasses.field(default_factory=list)


class _StopRequested:
  """SIGINT/SIGTERM set a flag the step loop checks between steps.

  Stopping between steps (rather than raising inside session.run) lets the
  run write its record and close the session cleanly.
  """

  def __init__(self):
    self.signal_name = None
    self._previous = {}

  def __enter__(self):
    for sig in (signal.SIGINT, signal.SIGTERM):
      try:
        self._previous[sig] = signal.signal(sig, self._handle)
      except ValueError:  # not the main thread: leave signals alone
        pass
    return self

  def _handle(self, signum, frame):
    del frame
    if self.signal_name is not None:
      # A second signal: the user insists; stop now.
      raise KeyboardInterrupt
    self.signal_name = signal.Signals(signum).name

  def __exit__(self, *exc):
    for sig, handler in self._previous.items():
      signal.signal(sig, handler)


def _utc_now():
  return datetime.datetime.now(datetime.timezone.utc).isoformat()


class _Interrupted(Exception):
  status = 'interrupted'


def run(params, reporter=None, rc=None, runtime=None) -> RunResult:
  """Runs one benchmark; never raises for run failures (see RunResult).

  ``runtime``: how the session is opened and steps are run; a cluster task
  passes its cluster/runtime.ClusterRuntime, else a single process's.
  """
  reporter = reporter or report.Reporter()
  runtime = runtime or local_runtime.LocalRuntime()
  started = _utc_now()
  run_id = uuid.uuid4().hex
  rc = rc or run_config.resolve(params)
  result = RunResult(status='ok', exit_code=exit_codes.OK)
  times = timing.StepTimes(rc.batch_size_per_worker)
  result.times = times
  source = None
  record_lock = threading.Lock()

  def write_record(status=None, exit_code=None, failure=None):
    """Records the run once; False if it was recorded already.

    Called at the end of this function, or earlier from a cluster task's
    watchdog thread (with how the run ended) when the main thread is stuck
    inside TensorFlow (cluster/task_exit.py).
    """
    with record_lock:
      if result.record is not None:
        return False
      if status is not None:
        result.status, result.exit_code = status, exit_code
        result.failure = failure
      result.record = record.build_record(
          run_id=run_id, started_at=started, finished_at=_utc_now(),
          params=params, rc=rc, result=result,
          data_description=source.description if source else None,
          cluster_run_id=params.cluster_run_id or None)
      if params.result_dir:
        result.record_path = record.write(params.result_dir, result.record)
      return True

  try:
    with _StopRequested() as stop:
      rc, source = open_input_source(params, rc)
      for note in rc.all_notes():
        reporter.line('Note: ' + note)
      built = model_graph.build(
          rc, source, runtime, want_accuracy=params.print_training_accuracy)
      runtime.attach_run(rc, result, write_record)
      reporter.header(rc, _variables_description(rc), source.description,
                      sync=_sync_description(rc))
      _run_session(params, rc, built, runtime, times, reporter, stop, result)
  except _Interrupted as e:
    result.status, result.exit_code = 'interrupted', exit_codes.INTERRUPTED
    result.failure = {'type': 'Interrupted', 'message': str(e),
                      'task': None, 'hint': None}
    reporter.line('Interrupted: %s. Partial results were recorded.' % e)
  except Exception as e:  # pylint: disable=broad-except
    # Cluster waits that time out carry their own status and code
    # (unreachable, UNREACHABLE).
    result.status = getattr(e, 'status', 'failed')
    result.exit_code = getattr(e, 'exit_code', exit_codes.RUN_FAILED)
    result.failure = failures.describe(e, rc)
    for line in failures.report_lines(result.failure, result.status):
      reporter.line(line)
    if params.verbosity >= 1:
      reporter.line(traceback.format_exc())
  write_record()
  if result.record_path:
    reporter.line('Run record: %s' % result.record_path)
  return result


def open_input_source(params, rc):
  """The run's input source, and rc with the real data's epoch size (and
  so its run length, for --num_epochs). Returns (rc, source)."""
  source = preprocessing.get_input_source(
      params, rc.model.image_size, rc.model.num_classes,
      rc.batch_size_per_device, rc.num_towers, rc.subset,
      data_name=rc.data_name, first_tower=rc.first_tower)
  if not source.synthetic and source.num_examples_per_epoch:
    rc = rc.with_examples_per_epoch(source.num_examples_per_epoch)
  return rc, source


def _variables_description(rc):
  return rc.params.variable_update


def _sync_description(rc):
  """The header's `Sync:` value: cluster runs only, as in the original."""
  return str(rc.params.cross_replica_sync) if rc.cluster else None


def _restore_latest(sess, params, built, reporter):
  latest = (tf1.train.latest_checkpoint(params.train_dir)
            if params.train_dir else None)
  if latest:
    built.saver.restore(sess, latest)
    reporter.line('Restored checkpoint %s (global step %d)' % (
        latest, sess.run(built.global_step)))
  elif params.eval:
    raise FileNotFoundError(
        'No checkpoint in --train_dir=%s to evaluate. Train with '
        '--train_dir=%s first (checkpoints are written at the end of a '
        'training run).' % (params.train_dir, params.train_dir))


class _Checkpointer:
  """Saves to train_dir every N steps / seconds and at the end."""

  def __init__(self, params, built, runtime):
    self.params = params
    self.built = built
    self.runtime = runtime
    self.last_time = time.monotonic()
    self.path = None
    self.saved_step = None

  def enabled(self):
    # In a cluster only the chief writes checkpoints (the others would race
    # it for the same files).
    return (bool(self.params.train_dir) and not self.params.eval and
            self.runtime.is_chief)

  def maybe_save(self, sess, step):
    if not self.enabled():
      return
    p = self.params
    due = (p.save_model_steps and step % p.save_model_steps == 0) or (
        p.save_model_secs and
        time.monotonic() - self.last_time >= p.save_model_secs)
    if due:
      self.save(sess)

  def save(self, sess):
    if not self.enabled():
      return
    # Only progress is saved: never the same global step twice (the
    # original's chief saved every 10 s while its cluster was stuck, and a
    # second save of a step rewrites the latest checkpoint's files).
    step = int(sess.run(self.built.global_step))
    self.last_time = time.monotonic()
    if step == self.saved_step:
      return
    os.makedirs(self.params.train_dir, exist_ok=True)
    # In a cluster the watchdog reports a save that takes too long.
    with self.runtime.doing('saving a checkpoint to %s' %
                            self.params.train_dir):
      # Saver writes the data files first and updates the 'checkpoint'
      # index last (atomically), so the latest checkpoint is never
      # half-written.
      self.path = self.built.saver.save(
          sess, os.path.join(self.params.train_dir, 'model.ckpt'),
          global_step=step)
    self.saved_step = step
    self.last_time = time.monotonic()


def _run_session(params, rc, built, runtime, times, reporter, stop, result):
  config = run_config.session_config(params, rc)
  fetches = {'step': built.step_op}
  loss = (built.base_loss if params.loss_type_to_report == 'base_loss'
          else built.total_loss)
  fetches['loss'] = loss
  with_accuracy = built.top_1_correct is not None
  if with_accuracy:
    fetches['top_1'] = built.top_1_correct
    fetches['top_5'] = built.top_5_correct
  if params.graph_file:
    graph_file = runtime.task_file_path(params.graph_file)
    atomic_files.write_text_atomically(graph_file, text_format.MessageToString(
        built.graph.as_graph_def()))
    reporter.line('Wrote the graph to %s' % graph_file)
  # N steps per session.run (--batch_group_size); N = 1 is a plain step.
  group_size = params.batch_group_size
  grouped = batch_group.chain(built.graph, fetches, group_size)
  built.graph.finalize()
  checkpointer = _Checkpointer(params, built, runtime)
  correct_1 = correct_5 = examples = 0
  step_options = runtime.step_run_options()
  with runtime.open_session(built.graph, config) as sess:
    reporter.line('Initializing graph')
    # In a cluster who initialises what, and when, is agreed across tasks.
    runtime.initialize(sess, built, restore=lambda: _restore_latest(
        sess, params, built, reporter))
    runner = batch_group.StepRunner(
        lambda f: runtime.run_step(sess, f, step_options), grouped,
        group_size)
    reporter.line('Running warm up')
    for _ in range(rc.num_warmup_batches):
      _check_stop(stop)
      times.add_warmup(runner.step().seconds)
    reporter.line('Done warm up')
    reporter.loss_name = params.loss_type_to_report
    reporter.table_head(with_accuracy and rc.training)
    runtime.timing_starts(sess)
    loop_start = time.perf_counter()
    try:
      for step in range(1, rc.num_batches + 1):
        _check_stop(stop)
        done = runner.step()
        values = done.values
        times.add(done.seconds, float(values['loss']))
        if result.diverged_at_step is None and not math.isfinite(
            values['loss']):
          # Speed is still measured, but say once that the numbers being
          # trained on are no longer numbers.
          result.diverged_at_step = step
          reporter.line('Warning: the loss is %s at step %d: training '
                        'diverged. Try a lower --init_learning_rate.' % (
                            values['loss'], step))
        accuracy = None
        if with_accuracy:
          correct_1 += int(values['top_1'])
          correct_5 += int(values['top_5'])
          examples += rc.batch_size_per_worker
          if rc.training:
            accuracy = (values['top_1'] / rc.batch_size_per_worker,
                        values['top_5'] / rc.batch_size_per_worker)
        if step == 1 or step % params.display_every == 0:
          reporter.step_row(step, times, values['loss'], accuracy)
        checkpointer.maybe_save(sess, step)
    finally:
      times.timed_wall_time = time.perf_counter() - loop_start
      result.images_per_sec = times.total_images_per_sec(rc.num_workers)
    reporter.total(result.images_per_sec)
    result.utilisation = _utilisation(params, rc, fetches, times)
    reporter.line(result.utilisation.line())
    runtime.report(sess, reporter, times)
    if rc.training and params.data_dir:
      _report_input_bound(
          lambda: sess.run(built.input_step, options=step_options), rc,
          times, reporter, result)
    if rc.mode == 'evaluation' and examples:
      result.top_1_accuracy = correct_1 / examples
      result.top_5_accuracy = correct_5 / examples
      result.num_eval_examples = examples
      reporter.accuracy(result.top_1_accuracy, result.top_5_accuracy,
                        examples)
    if params.trace_file:
      trace_file = runtime.task_file_path(params.trace_file)
      _write_trace(sess, fetches, trace_file)
      reporter.line('Wrote a trace of one extra step to %s' % trace_file)
    checkpointer.save(sess)
    result.checkpoint_path = checkpointer.path


def _utilisation(params, rc, fetches, times):
  """MFU of the timed loop: FLOPs counted on the fetched graph, this
  process's images/sec, the peak of the compute dtype (mfu.py)."""
  per_image = mfu.gflops_per_image(fetches, rc.batch_size_per_worker)
  # Cluster tasks may share a host: they use a cached peak, never measure.
  return mfu.compute(params, rc.compute_dtype, per_image,
                             times.total_images_per_sec(1),
                             may_measure=rc.cluster is None)


# Steps of the input-only probe that follows a real-data training loop.
_INPUT_PROBE_STEPS = 20
# Input alone faster than training by less than this factor: input-bound.
_INPUT_BOUND_RATIO = 1.2


def _report_input_bound(run_input_step, rc, times, reporter, result):
  """Times the input pipeline alone, right after training, and says whether
  it could keep up.

  Alone the pipeline has the whole machine; during training it shared it
  with the model, so a ratio near 1 means the model was waiting for data.
  """
  steps = min(_INPUT_PROBE_STEPS, max(rc.num_batches, 5))
  run_input_step()  # the first pull may still pay for refilling buffers
  start = time.perf_counter()
  for _ in range(steps):
    run_input_step()
  rate = steps * rc.batch_size_per_worker / (time.perf_counter() - start)
  ratio = rate / max(times.total_images_per_sec(1), 1e-9)
  result.input_images_per_sec = rate
  result.input_bound = ratio < _INPUT_BOUND_RATIO
  reporter.line('Input pipeline alone: %.1f images/sec, %.1fx the training '
                'rate: %s' % (rate, ratio, 'training was input-bound'
                              if result.input_bound else 'not input-bound'))


def _check_stop(stop):
  if stop.signal_name:
    raise _Interrupted('stopped by %s' % stop.signal_name)


def _write_trace(sess, fetches, path):
  """Traces one extra, untimed step (tracing slows the step it traces)."""
  from tensorflow.python.client import timeline  # pylint: disable=g-import-not-at-top
  options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
  metadata = tf1.RunMetadata()
  sess.run(fetches, options=options, run_metadata=metadata)
  trace = timeline.Timeline(metadata.step_stats).generate_chrome_trace_format()
  atomic_files.write_text_atomically(path, trace)
