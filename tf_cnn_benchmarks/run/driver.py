"""One benchmark run in one process: build, initialise, warm up, time, report.

``run(params, engine)`` is the library entry point (tests and notebooks call
it, or their engine module's ``run``, and get a RunResult back);
benchmark_main wraps it for the command line.
"""

import threading
import traceback
import uuid

import preprocessing
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.config import run_mode
from tf_cnn_benchmarks.liveness import run_exit
from tf_cnn_benchmarks.liveness import stop_request
from tf_cnn_benchmarks.liveness import watchdog
from tf_cnn_benchmarks.measure import cpu_share
from tf_cnn_benchmarks.measure import memory
from tf_cnn_benchmarks.measure import mfu
from tf_cnn_benchmarks.run import evaluation
from tf_cnn_benchmarks.run import local_runtime
from tf_cnn_benchmarks.run import mlperf_log
from tf_cnn_benchmarks.run import record
from tf_cnn_benchmarks.run import report
from tf_cnn_benchmarks.run import run_state
from tf_cnn_benchmarks.run import timing
from tf_cnn_benchmarks.run import train_dir_lock
from tf_cnn_benchmarks.run.run_result import RunResult


def run(params, engine, reporter=None, rc=None, runtime=None) -> RunResult:
  """Runs one benchmark; never raises for run failures (see RunResult).

  ``runtime``: how the session is opened and steps are run
  (contracts.Runtime); a cluster task passes its own, else a single
  process's.
  ``engine``: what builds and runs the steps, the one --engine names
  (engine_graph/engine.py or engine_tf2/engine.py); the entry points
  choose it.

  From its first phase the run is watched (liveness/watchdog.py): a signal
  or a stall ends it even while it is blocked inside TensorFlow, with its
  record written, by os._exit from the watchdog's thread.
  """
  reporter = reporter or report.Reporter()
  runtime = runtime or local_runtime.LocalRuntime()
  if engine.name != params.engine:
    raise ValueError('--engine=%s, but driver.run was handed the %s engine; '
                     'run it through benchmark_main (or the engine module\'s '
                     'run).' % (params.engine, engine.name))
  started = record.utc_now()
  run_id = uuid.uuid4().hex
  rc = rc or run_config.resolve(params)
  result = RunResult(status='ok', exit_code=exit_codes.OK)
  times = timing.StepTimes(rc.batch_size_per_worker)
  result.times = times
  source = None
  record_lock = threading.Lock()
  watch = None
  # --ml_perf_compliance_logging: init_start now, before anything is built
  # (MLPerf's init phase); else milestones nobody logs.
  milestones = mlperf_log.open_log(params, run_id, reporter.say)
  result.mlperf_log_path = milestones.path

  def write_record(status=None, exit_code=None, failure=None):
    """Records the run once; False if it was recorded already.

    Called at the end of this function, or earlier from the watchdog
    thread (with how the run ended) when the main thread is stuck inside
    TensorFlow (liveness/run_exit.py).
    """
    with record_lock:
      if result.record is not None:
        return False
      if status is not None:
        result.status, result.exit_code = status, exit_code
        result.failure = failure
      milestones.run_stops(result.status)
      result.phases = watch.phases.seconds() if watch else {}
      result.memory = memory.measure()
      result.record = record.build_record(
          run_id=run_id, started_at=started, finished_at=record.utc_now(),
          params=params, rc=rc, result=result,
          data_description=source.description if source else None,
          cluster_run_id=params.cluster_run_id or None)
      if params.result_dir:
        result.record_path = record.write_or_say(
            params.result_dir, result.record, reporter.say)
      return True

  def fail(status, exit_code, failure):
    """The main thread's failure, said and kept for the record; False
    (nothing done) when the watchdog has ended the run already: it said
    how and recorded it, and is leaving with that ending's code (an error
    the stuck call raised meanwhile, e.g. once the peers left, is a
    consequence)."""
    with record_lock:
      if result.record is not None:
        return False
      result.status, result.exit_code = status, exit_code
      result.failure = failure
    for line in failures.report_lines(failure, status):
      reporter.say(line)
    return True

  leave = run_exit.RunExit(write_record, lambda: result.record_path,
                           reporter.say)
  # The stop request and the watchdog start together: no phase of the run
  # is left where a signal only sets a flag nobody reads.
  with watchdog.Watchdog(leave, reporter.say) as watch:
    try:
      # Before anything is restored: a second run writing the same
      # --train_dir would overwrite this one's checkpoints.
      with train_dir_lock.train_dir_locked(rc, runtime, reporter,
                                            leave.before_exit):
        rc = runtime.begin(rc, watch)
        # However the rest ends, the runtime sees it (a tf2 cluster task
        # leaves its note and tells its peers, also when its input fails).
        with runtime.running():
          engine.prepare(rc)
          with watch.phase('input'):
            # rc.params: the flags with the sizes resolve chose (a GPU's
            # input threads, run_config._gpu_thread_defaults).
            rc, source = open_input_source(rc.params, rc)
            eval_source = None
            if rc.mode is run_mode.RunMode.TRAINING_AND_EVALUATION:
              rc, eval_source = open_validation_source(rc.params, rc)
          for note in rc.all_notes():
            reporter.say('Note: ' + note)
          engine.train(run_state.RunState(rc, runtime, reporter, watch,
                                          times, result, milestones),
                       source, eval_source)
          converged(params, result, reporter)
    except stop_request.Interrupted as e:
      fail('interrupted', exit_codes.INTERRUPTED,
           failures.failure('Interrupted', str(e)))
    except Exception as e:  # pylint: disable=broad-except
      # Cluster waits that time out carry their own status and code
      # (unreachable, UNREACHABLE).
      if fail(getattr(e, 'status', 'failed'),
              getattr(e, 'exit_code', exit_codes.RUN_FAILED),
              failures.describe(e, rc, memory.peak_on)) and (
                  params.verbosity >= 1):
        reporter.say(traceback.format_exc())
    if write_record():
      reporter.say(result.memory.line())
      if result.record_path:
        reporter.say('Run record: %s' % result.record_path)
  return result


def converged(params, result, reporter):
  """A training run with --stop_at_top_1_accuracy that ended well: the
  time to target, or the status of its own when it fell short
  (run/evaluation.py)."""
  target = params.stop_at_top_1_accuracy
  if target is None or result.status != 'ok':
    return
  if result.target is not None:
    reporter.say(result.target.line())
    return
  result.status = 'target_not_reached'
  result.exit_code = exit_codes.TARGET_NOT_REACHED
  reporter.say(evaluation.not_reached_line(target, result.evaluations))


def open_input_source(params, rc):
  """The run's input source, and rc with the real data's epoch size (and
  so its run length, for --num_epochs). Returns (rc, source)."""
  source = preprocessing.get_input_source(
      params, rc.model.image_size, rc.model.num_classes,
      rc.batch_size_per_device, rc.num_towers, rc.subset,
      data_name=rc.data_name, first_tower=rc.first_tower,
      id_vocab_sizes=rc.model.id_vocab_sizes)
  if not source.synthetic and source.num_examples_per_epoch:
    rc = rc.with_examples_per_epoch(source.num_examples_per_epoch)
  return rc, source


def open_validation_source(params, rc):
  """The validation input of evaluation during training, and rc with the
  length of one evaluation. Returns (rc, source)."""
  source = preprocessing.get_input_source(
      params, rc.model.image_size, rc.model.num_classes,
      rc.eval_batch_size_per_device, rc.num_towers, 'validation',
      data_name=rc.data_name, first_tower=rc.first_tower,
      id_vocab_sizes=rc.model.id_vocab_sizes)
  return rc.with_validation_size(source.num_examples_per_epoch), source












def time_steps(state, loop, timing_starts=None):
  """Either engine's steps: the warm-up, then the timed loop (a
  step_loop.StepLoop), then the `total images/sec` line; the rate goes to
  the result even when the loop fails."""
  result = state.result
  with state.watch.phase('warm_up'):
    loop.warm_up()
  if timing_starts is not None:
    timing_starts()
  # How quiet the machine was, and what the steps cost in CPU: a second
  # view of a change in speed that other processes cannot colour.
  others = cpu_share.OtherProcessesMeter()
  own_before = cpu_share.own_seconds()
  try:
    with state.watch.phase('timed_loop', announce=False), others:
      loop.run()
  finally:
    times = state.times
    result.images_per_sec = times.total_images_per_sec(state.rc.num_workers)
    result.other_cpu_share = others.share
    images = times.num_steps * state.rc.batch_size_per_worker
    result.cpu_seconds_per_image = ((cpu_share.own_seconds() - own_before) /
                                    images if images else None)
  state.reporter.total(result.images_per_sec)


def utilisation(state, gflops_per_image):
  """The MFU of the timed loop (either engine), its line printed: FLOPs
  per image counted on the step's graph, this process's images/sec, the
  peak of the compute dtype (mfu.py)."""
  rc = state.rc
  # Cluster tasks may share a host: they use a cached peak, never measure.
  measured = mfu.compute(rc.params, rc.compute_dtype, gflops_per_image,
                         state.times.total_images_per_sec(1),
                         may_measure=rc.cluster is None)
  state.reporter.say(measured.line())
  return measured
