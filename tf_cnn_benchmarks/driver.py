"""One benchmark run in one process: build, initialise, warm up, time, report.

``run(params)`` is the library entry point (tests and notebooks call it and
get a RunResult back); benchmark_main wraps it for the command line.
"""

import dataclasses
import datetime
import os
import signal
import time
import traceback
import uuid
from typing import Optional

import tensorflow as tf

import preprocessing
from results import atomic_files
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import model_graph
from tf_cnn_benchmarks import record
from tf_cnn_benchmarks import report
from tf_cnn_benchmarks import run_config
from tf_cnn_benchmarks import timing

tf1 = tf.compat.v1


@dataclasses.dataclass
class RunResult:
  status: str                   # ok | failed | interrupted
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
  pass


def run(params, reporter=None, rc=None) -> RunResult:
  """Runs one benchmark; never raises for run failures (see RunResult)."""
  reporter = reporter or report.Reporter()
  started = _utc_now()
  run_id = uuid.uuid4().hex
  rc = rc or run_config.resolve(params)
  for note in rc.notes:
    reporter.line('Note: ' + note)
  result = RunResult(status='ok', exit_code=exit_codes.OK)
  times = timing.StepTimes(rc.batch_size_per_worker)
  result.times = times
  source = None
  try:
    with _StopRequested() as stop:
      # The source sees the dataset the run config settled on (it may have
      # been inferred from the model).
      source = preprocessing.get_input_source(
          params.replace(data_name=rc.data_name), rc.model.image_size, rc.model.num_classes,
          rc.batch_size_per_device, rc.num_towers, rc.subset)
      if not source.synthetic and source.num_examples_per_epoch:
        rc = dataclasses.replace(
            rc, examples_per_epoch=source.num_examples_per_epoch)
      built = model_graph.build(
          rc, source, want_accuracy=params.print_training_accuracy)
      reporter.header(rc, _variables_description(rc), source.description,
                      sync=_sync_description(rc))
      _run_session(params, rc, built, times, reporter, stop, result)
  except _Interrupted as e:
    result.status, result.exit_code = 'interrupted', exit_codes.INTERRUPTED
    result.failure = {'type': 'Interrupted', 'message': str(e),
                      'task': None, 'hint': None}
    reporter.line('Interrupted: %s. Partial results were recorded.' % e)
  except Exception as e:  # pylint: disable=broad-except
    result.status = 'failed'
    # Cluster waits that time out carry their own code (UNREACHABLE).
    result.exit_code = getattr(e, 'exit_code', exit_codes.RUN_FAILED)
    result.failure = _describe_failure(e, rc)
    reporter.line('Run failed: %s' % result.failure['message'])
    if result.failure.get('hint'):
      reporter.line('Hint: %s' % result.failure['hint'])
    if params.verbosity >= 1:
      reporter.line(traceback.format_exc())
  result.record = record.build_record(
      run_id=run_id, started_at=started, finished_at=_utc_now(),
      params=params, rc=rc, result=result,
      data_description=source.description if source else None,
      cluster_run_id=params.cluster_run_id or None)
  if params.result_dir:
    result.record_path = record.write(params.result_dir, result.record)
  return result


def _variables_description(rc):
  return rc.params.variable_update


def _sync_description(rc):
  """The header's `Sync:` value: cluster runs only, as in the original."""
  return str(rc.params.cross_replica_sync) if rc.cluster else None


def _describe_failure(exc, rc):
  """The failure's type, message and a hint, for the user and the record."""
  explain = getattr(preprocessing, 'explain_data_error', None)
  if explain is not None and rc.params.data_dir:
    data_error = explain(exc)
    if data_error is not None:
      return {'type': 'DataError', 'message': str(data_error), 'task': None,
              'hint': None}
  hint = None
  if isinstance(exc, tf.errors.ResourceExhaustedError):
    hint = ('Out of memory with %d images per device of %dx%d; try '
            '--batch_size=%d.' % (rc.batch_size_per_device,
                                  rc.model.image_size, rc.model.image_size,
                                  max(1, rc.batch_size_per_device // 2)))
  message = getattr(exc, 'message', None) or str(exc)
  first_line = message.strip().splitlines()[0] if message.strip() else ''
  return {'type': type(exc).__name__, 'message': first_line or repr(exc),
          'task': None, 'hint': hint}


def _restore_or_init(sess, params, rc, built, reporter):
  """Initialises, then restores the latest checkpoint in train_dir if any."""
  if built.coordination is not None:
    # In a cluster who initialises what, and when, is agreed across tasks.
    built.coordination.initialize(
        sess, built, restore=lambda: _restore_latest(sess, params, built,
                                                     reporter))
    return
  sess.run(built.init_ops)
  sess.run(built.input_init_ops)
  _restore_latest(sess, params, built, reporter)
  # Replicated copies are made equal after a restore too (restore sets only
  # copy 0).
  sess.run(built.post_init_ops)


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

  def __init__(self, params, built):
    self.params = params
    self.built = built
    self.last_time = time.monotonic()
    self.path = None

  def enabled(self):
    return bool(self.params.train_dir) and not self.params.eval

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
    os.makedirs(self.params.train_dir, exist_ok=True)
    # Saver writes the data files first and updates the 'checkpoint' index
    # last (atomically), so the latest checkpoint is never half-written.
    self.path = self.built.saver.save(
        sess, os.path.join(self.params.train_dir, 'model.ckpt'),
        global_step=self.built.global_step)
    self.last_time = time.monotonic()


def _run_session(params, rc, built, times, reporter, stop, result):
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
    tf.io.write_graph(built.graph.as_graph_def(), os.path.dirname(
        os.path.abspath(params.graph_file)), os.path.basename(
            params.graph_file), as_text=True)
  built.graph.finalize()
  checkpointer = _Checkpointer(params, built)
  correct_1 = correct_5 = examples = 0
  step_options = _step_run_options(params, rc)
  with _open_session(built, config) as sess:
    reporter.line('Initializing graph')
    _restore_or_init(sess, params, rc, built, reporter)
    reporter.line('Running warm up')
    for _ in range(rc.num_warmup_batches):
      _check_stop(stop)
      start = time.perf_counter()
      _run_step(sess, fetches, step_options)
      times.add_warmup(time.perf_counter() - start)
    reporter.line('Done warm up')
    reporter.loss_name = params.loss_type_to_report
    reporter.table_head(with_accuracy and rc.training)
    if built.coordination is not None:
      built.coordination.timing_starts(sess)
    loop_start = time.perf_counter()
    try:
      for step in range(1, rc.num_batches + 1):
        _check_stop(stop)
        start = time.perf_counter()
        values = _run_step(sess, fetches, step_options)
        times.add(time.perf_counter() - start, float(values['loss']))
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
    if built.coordination is not None:
      built.coordination.report(sess, reporter, times)
    if rc.mode == 'evaluation' and examples:
      result.top_1_accuracy = correct_1 / examples
      result.top_5_accuracy = correct_5 / examples
      result.num_eval_examples = examples
      reporter.accuracy(result.top_1_accuracy, result.top_5_accuracy,
                        examples)
    if params.trace_file:
      _write_trace(sess, fetches, params.trace_file)
      reporter.line('Wrote a trace of one extra step to %s' %
                    params.trace_file)
    checkpointer.save(sess)
    result.checkpoint_path = checkpointer.path


def _open_session(built, config):
  if built.coordination is not None:
    return built.coordination.open_session(built.graph, config)
  return tf1.Session(graph=built.graph, config=config)


def _step_run_options(params, rc):
  """RunOptions of every step: in a cluster, bounded by --stall_timeout.

  A dead peer can otherwise block a synchronous step forever.
  """
  if rc.cluster is None or not params.stall_timeout:
    return None
  return tf1.RunOptions(timeout_in_ms=int(params.stall_timeout * 1000))


def _run_step(sess, fetches, options):
  """Every training/eval step's session.run goes through here."""
  return sess.run(fetches, options=options)


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
