"""One benchmark run in one process: build, initialise, warm up, time, report.

``run(params)`` is the library entry point (tests and notebooks call it and
get a RunResult back); benchmark_main wraps it for the command line.
"""

import contextlib
import threading
import time
import traceback
import uuid

from google.protobuf import text_format
import tensorflow as tf

import preprocessing
from results import atomic_files
from tf_cnn_benchmarks import backbone
from tf_cnn_benchmarks import batch_group
from tf_cnn_benchmarks import benchmark_logger
from tf_cnn_benchmarks import checkpoints
from tf_cnn_benchmarks import evaluation
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks import flag_specs
from tf_cnn_benchmarks import freezing
from tf_cnn_benchmarks import local_runtime
from tf_cnn_benchmarks import model_graph
from tf_cnn_benchmarks import profiling
from tf_cnn_benchmarks import record
from tf_cnn_benchmarks import report
from tf_cnn_benchmarks import run_config
from tf_cnn_benchmarks.run_result import RunResult
from tf_cnn_benchmarks import step_loop
from tf_cnn_benchmarks import summaries
from tf_cnn_benchmarks import timing
from tf_cnn_benchmarks.liveness import run_exit
from tf_cnn_benchmarks.liveness import stop_request
from tf_cnn_benchmarks.liveness import watchdog
from tf_cnn_benchmarks.measure import mfu

tf1 = tf.compat.v1


class GraphEngine:
  """--engine=graph: the run's graph, built and run in a tf.compat.v1
  session (the original tool's way). The tf2 engine (engine_tf2/engine.py)
  has the same two methods; the entry point hands it over."""

  name = flag_specs.GRAPH_ENGINE

  def prepare(self, rc):
    """Before the run touches TensorFlow's runtime: nothing to do."""
    del rc

  def train(self, params, rc, source, eval_source, runtime, times, reporter,
            watch, result):
    """Builds, prints the header, runs the session to its report."""
    with watch.phase('graph_build'):
      built = model_graph.build(
          rc, source, runtime,
          want_accuracy=params.print_training_accuracy,
          eval_source=eval_source,
          summary_verbosity=params.summary_verbosity)
    runtime.attach_run(rc, result)
    reporter.header(rc, _variables_description(rc), source.description,
                    sync=sync_description(rc))
    _run_session(params, rc, built, runtime, times, reporter, watch, result)


def run(params, reporter=None, rc=None, runtime=None,
        engine=None) -> RunResult:
  """Runs one benchmark; never raises for run failures (see RunResult).

  ``runtime``: how the session is opened and steps are run; a cluster task
  passes its cluster/runtime.ClusterRuntime, else a single process's.
  ``engine``: what builds and runs the steps (GraphEngine by default; the
  entry point passes engine_tf2's for --engine=tf2).

  From its first phase the run is watched (liveness/watchdog.py): a signal
  or a stall ends it even while it is blocked inside TensorFlow, with its
  record written, by os._exit from the watchdog's thread.
  """
  reporter = reporter or report.Reporter()
  runtime = runtime or local_runtime.LocalRuntime()
  engine = engine or GraphEngine()
  if engine.name != params.engine:
    raise ValueError('--engine=%s, but driver.run was handed the %s engine; '
                     'run it through benchmark_main (or engine_tf2.engine.'
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
      result.phases = watch.phases.seconds() if watch else {}
      result.record = record.build_record(
          run_id=run_id, started_at=started, finished_at=record.utc_now(),
          params=params, rc=rc, result=result,
          data_description=source.description if source else None,
          cluster_run_id=params.cluster_run_id or None)
      if params.result_dir:
        result.record_path = record.write_or_say(
            params.result_dir, result.record, reporter.line)
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
      reporter.line(line)
    return True

  leave = run_exit.RunExit(write_record, lambda: result.record_path,
                           reporter.line)
  # The stop request and the watchdog start together: no phase of the run
  # is left where a signal only sets a flag nobody reads.
  with watchdog.Watchdog(leave, reporter.line) as watch:
    try:
      # Before anything is restored: a second run writing the same
      # --train_dir would overwrite this one's checkpoints.
      with checkpoints.train_dir_locked(params, runtime, reporter):
        rc = runtime.begin(rc, watch)
        # However the rest ends, the runtime sees it (a tf2 cluster task
        # leaves its note and tells its peers, also when its input fails).
        with runtime.running():
          engine.prepare(rc)
          with watch.phase('input'):
            rc, source = open_input_source(params, rc)
            eval_source = None
            if rc.mode == run_config.TRAINING_AND_EVALUATION:
              rc, eval_source = open_validation_source(params, rc)
          for note in rc.all_notes():
            reporter.line('Note: ' + note)
          engine.train(params, rc, source, eval_source, runtime, times,
                       reporter, watch, result)
    except stop_request.Interrupted as e:
      fail('interrupted', exit_codes.INTERRUPTED,
           failures.failure('Interrupted', str(e)))
    except Exception as e:  # pylint: disable=broad-except
      # Cluster waits that time out carry their own status and code
      # (unreachable, UNREACHABLE).
      if fail(getattr(e, 'status', 'failed'),
              getattr(e, 'exit_code', exit_codes.RUN_FAILED),
              failures.describe(e, rc)) and params.verbosity >= 1:
        reporter.line(traceback.format_exc())
    if write_record() and result.record_path:
      reporter.line('Run record: %s' % result.record_path)
  return result


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


def _variables_description(rc):
  return rc.params.variable_update


def sync_description(rc):
  """The header's `Sync:` value: cluster runs only, as in the original."""
  if not rc.cluster:
    return None
  if rc.params.sync_updates == 'barrier':
    return 'True (barrier: each worker applies its own gradient)'
  return str(rc.params.cross_replica_sync)


def _run_session(params, rc, built, runtime, times, reporter, watch, result):
  config = run_config.session_config(params, rc)
  if freezing.wanted(params):
    built = freezing.freeze(built, config)
    reporter.line('Froze the graph: every variable is now a constant')
  fetches = {'step': built.step_op}
  loss = (built.base_loss if params.loss_type_to_report == 'base_loss'
          else built.total_loss)
  fetches['loss'] = loss
  if built.top_1_correct is not None:
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
  writer = summaries.Writer(params, built) if summaries.wanted(params) \
      else None
  # Adds restore ops, so before the graph is final.
  backbone_restorer = (backbone.BackboneRestorer(
      built, params.backbone_model_path) if params.backbone_model_path
                       else None)
  built.graph.finalize()
  metric_log = (benchmark_logger.open_logger(
      runtime.task_file_path(params.benchmark_log_dir), params, rc, config)
                if params.benchmark_log_dir else None)
  checkpointer = checkpoints.Checkpointer(params, built, runtime)
  step_options = runtime.step_run_options()
  # The summary writer is closed (its buffer flushed) however the run ends.
  with runtime.open_session(built.graph, config) as sess, (
      contextlib.closing(writer) if writer else contextlib.nullcontext()):
    reporter.line('Initializing graph')
    # In a cluster who initialises what, and when, is agreed across tasks.
    restored = []

    def restore():
      restored.append(checkpoints.restore_latest(sess, params, built,
                                                 reporter))
      # A resumed run's own checkpoint already holds trained weights.
      if backbone_restorer is not None and restored[-1] is None:
        backbone_restorer.restore(sess, reporter)
    with watch.phase('initialisation'):
      runtime.initialize(sess, built, restore=restore)
    runner = batch_group.StepRunner(
        lambda f: runtime.run_step(sess, f, step_options), grouped,
        group_size)
    loop = step_loop.StepLoop(
        params, rc, built, runner, times, reporter, watch, result,
        checkpointer, _evaluator(params, rc, built), writer, metric_log)
    time_steps(loop, rc, times, reporter, watch, result, sess, step_options,
               timing_starts=lambda: runtime.timing_starts(sess))
    if metric_log is not None:
      metric_log.log_metric('average_examples_per_sec',
                            result.images_per_sec,
                            global_step=times.num_steps)
    report_utilisation(params, rc, mfu.gflops_per_image(
        fetches, rc.batch_size_per_worker), times, reporter, result)
    runtime.report(sess, reporter, times)
    if rc.training and params.data_dir:
      _report_input_bound(
          lambda: sess.run(built.input_step, options=step_options), rc,
          times, reporter, result)
    if rc.mode == 'evaluation':
      _report_evaluation(sess, params, built, loop, reporter, result,
                         restored)
    if profiling.wanted(params):
      profiling.profile_extra_step(sess, fetches, params, runtime, reporter)
    with watch.phase('final_save'):
      checkpointer.save(sess)
    result.checkpoint_path = checkpointer.path


def _evaluator(params, rc, built):
  """Evaluation during training, or None."""
  if built.eval_top_1_correct is None:
    return None
  steps_per_epoch = rc.examples_per_epoch / rc.global_batch_size
  return evaluation.DuringTraining(
      params, built, evaluation.schedule(params, rc.num_batches,
                                         steps_per_epoch),
      rc.eval_steps, rc.eval_batch_size_per_worker)


def _report_evaluation(sess, params, built, loop, reporter, result, restored):
  """--eval: the accuracy of the timed steps; then, with
  --eval_interval_secs, of every newer checkpoint until stopped."""
  evaluated = loop.evaluation_of_timed_steps(int(sess.run(built.global_step)))
  if evaluated is None:
    return
  result.top_1_accuracy = evaluated.top_1_accuracy
  result.top_5_accuracy = evaluated.top_5_accuracy
  result.num_eval_examples = evaluated.num_examples
  loop.record_evaluation(evaluated, result.images_per_sec)
  if params.eval_interval_secs:
    reporter.line('Following %s: a newer checkpoint is evaluated as it '
                  'appears (checked every %d s) until stopped.' % (
                      params.train_dir, params.eval_interval_secs))
    last = restored[-1] if restored else None

    def restore_newer():
      nonlocal last
      latest = tf1.train.latest_checkpoint(params.train_dir)
      if latest is None or latest == last:
        return False
      last = checkpoints.restore_latest(sess, params, built, reporter)
      return True
    loop.follow_checkpoints(sess, restore_newer)


def time_steps(loop, rc, times, reporter, watch, result, sess=None,
               step_options=None, timing_starts=None):
  """Either engine's steps: the warm-up, then the timed loop (a
  step_loop.StepLoop), then the `total images/sec` line."""
  with watch.phase('warm_up'):
    loop.warm_up()
  if timing_starts is not None:
    timing_starts()
  try:
    with watch.phase('timed_loop', announce=False):
      loop.run(sess, step_options)
  finally:
    result.images_per_sec = times.total_images_per_sec(rc.num_workers)
  reporter.total(result.images_per_sec)


def report_utilisation(params, rc, gflops_per_image, times, reporter,
                       result):
  """The MFU line and its record of the timed loop (either engine): FLOPs
  per image counted on the step's graph, this process's images/sec, the
  peak of the compute dtype (mfu.py)."""
  # Cluster tasks may share a host: they use a cached peak, never measure.
  result.utilisation = mfu.compute(params, rc.compute_dtype,
                                   gflops_per_image,
                                   times.total_images_per_sec(1),
                                   may_measure=rc.cluster is None)
  reporter.line(result.utilisation.line())


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
