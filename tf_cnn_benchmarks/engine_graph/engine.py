"""The object driver.run calls for --engine=graph (engine_tf2/engine.py's
twin): the run's graph built, then run in a tf.compat.v1 session with what
only this engine has (freezing, grouped steps, summaries, backbone weights,
the benchmark logger, checkpoints, evaluation, the extra profiled step, the
input-only probe).
"""

import contextlib
import time

from google.protobuf import text_format
import tensorflow as tf

from basics import atomic_files
from tf_cnn_benchmarks.config import flag_specs
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.config import run_mode
from tf_cnn_benchmarks.engine_graph import backbone
from tf_cnn_benchmarks.engine_graph import batch_group
from tf_cnn_benchmarks.engine_graph import benchmark_logger
from tf_cnn_benchmarks.engine_graph import checkpoints
from tf_cnn_benchmarks.engine_graph import freezing
from tf_cnn_benchmarks.engine_graph import model_graph
from tf_cnn_benchmarks.engine_graph import profiling
from tf_cnn_benchmarks.engine_graph import step_extras
from tf_cnn_benchmarks.engine_graph import summaries
from tf_cnn_benchmarks.measure import mfu
from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.run import report
from tf_cnn_benchmarks.run import step_loop

tf1 = tf.compat.v1


class GraphEngine:
  """--engine=graph: the run's graph, built and run in a tf.compat.v1
  session (the original tool's way). The tf2 engine (engine_tf2/engine.py)
  is its twin: the same two methods (contracts.Engine)."""

  name = flag_specs.GRAPH_ENGINE

  def prepare(self, rc):
    """Before the run touches TensorFlow's runtime: nothing to do."""
    del rc

  def train(self, state, source, eval_source):
    """Builds, prints the header, runs the session to its report."""
    rc, params = state.rc, state.params
    with state.watch.phase('graph_build'):
      built = model_graph.build(
          rc, source, state.runtime,
          want_accuracy=params.print_training_accuracy,
          eval_source=eval_source,
          summary_verbosity=params.summary_verbosity)
    state.runtime.attach_run(rc, state.result)
    state.reporter.header(rc, params.variable_update, source.description,
                          sync=report.sync_description(rc))
    _run_session(state, built)


def run(params, reporter=None, rc=None, runtime=None):
  """driver.run with this engine (the library entry, as driver.run)."""
  return driver.run(params, GraphEngine(), reporter=reporter, rc=rc,
                    runtime=runtime)


def _fetches(params, built):
  """What every timed step fetches: the update, the loss, and the
  accuracy counts when the graph has them."""
  fetches = {'step': built.step_op}
  fetches['loss'] = (built.base_loss
                     if params.loss_type_to_report == 'base_loss'
                     else built.total_loss)
  if built.top_1_correct is not None:
    fetches['top_1'] = built.top_1_correct
    fetches['top_5'] = built.top_5_correct
  return fetches


def _write_graph(state, built):
  """--graph_file: the graph as text, where the user asked."""
  graph_file = state.runtime.task_file_path(state.params.graph_file)
  atomic_files.write_text_atomically(graph_file, text_format.MessageToString(
      built.graph.as_graph_def()))
  state.reporter.say('Wrote the graph to %s' % graph_file)


def _run_session(state, built):
  params, rc, runtime, reporter = (state.params, state.rc, state.runtime,
                                   state.reporter)
  result = state.result
  config = run_config.session_config(params, rc)
  if freezing.wanted(rc):
    built = freezing.freeze(built, config)
    reporter.say('Froze the graph: every variable is now a constant')
  fetches = _fetches(params, built)
  if params.graph_file:
    _write_graph(state, built)
  # N steps per session.run (--batch_group_size); N = 1 is a plain step.
  group_size = params.batch_group_size
  grouped = batch_group.chain(built.graph, fetches, group_size)
  writer = summaries.Writer(rc, built) if summaries.wanted(params) \
      else None
  # Adds restore ops, so before the graph is final.
  backbone_restorer = (backbone.BackboneRestorer(
      built, params.backbone_model_path) if params.backbone_model_path
                       else None)
  built.graph.finalize()
  metric_log = (benchmark_logger.open_logger(
      runtime.task_file_path(params.benchmark_log_dir), params, rc, config)
                if params.benchmark_log_dir else None)
  checkpointer = checkpoints.Checkpointer(rc, built, runtime)
  step_options = runtime.step_run_options()
  # The summary writer is closed (its buffer flushed) however the run ends.
  with runtime.open_session(built.graph, config) as sess, (
      contextlib.closing(writer) if writer else contextlib.nullcontext()):
    reporter.say('Initializing graph')
    # In a cluster who initialises what, and when, is agreed across tasks.
    restored = []

    def restore():
      restored.append(checkpoints.restore_latest(sess, rc, built,
                                                 reporter))
      # A resumed run's own checkpoint already holds trained weights.
      if backbone_restorer is not None and restored[-1] is None:
        backbone_restorer.restore(sess, reporter)
    with state.watch.phase('initialisation'):
      runtime.initialize(sess, built, restore=restore)
    runner = batch_group.SessionStepRunner(
        lambda f: runtime.run_step(sess, f, step_options), grouped,
        group_size)
    extras = step_extras.GraphExtras(
        state, built, sess, step_options, checkpointer,
        step_extras.Evaluator.of_run(rc, built), writer, metric_log)
    loop = step_loop.StepLoop(state, runner, extras)
    driver.time_steps(state, loop,
                      timing_starts=lambda: runtime.timing_starts(sess))
    if metric_log is not None:
      metric_log.log_metric('average_examples_per_sec',
                            result.images_per_sec,
                            global_step=state.times.num_steps)
    result.utilisation = driver.utilisation(state, mfu.gflops_per_image(
        fetches, rc.batch_size_per_worker))
    runtime.report(sess, reporter, state.times)
    if rc.training and params.data_dir:
      result.input_images_per_sec, result.input_bound = _input_bound(
          state, lambda: sess.run(built.input_step, options=step_options))
    if rc.mode is run_mode.RunMode.EVALUATION:
      _evaluate_checkpoints(state, sess, built, loop, restored)
    if profiling.wanted(params):
      profiling.profile_extra_step(sess, fetches, params, runtime, reporter)
    with state.watch.phase('final_save'):
      checkpointer.save(sess)
    result.checkpoint_path = checkpointer.path


def _evaluate_checkpoints(state, sess, built, loop, restored):
  """--eval: the accuracy of the timed steps; then, with
  --eval_interval_secs, of every newer checkpoint until stopped."""
  params, result = state.params, state.result
  evaluated = loop.evaluation_of_timed_steps()
  if evaluated is None:
    return
  result.top_1_accuracy = evaluated.top_1_accuracy
  result.top_5_accuracy = evaluated.top_5_accuracy
  result.num_eval_examples = evaluated.num_examples
  loop.record_evaluation(evaluated, result.images_per_sec)
  if params.eval_interval_secs:
    state.reporter.say(
        'Following %s: a newer checkpoint is evaluated as it appears '
        '(checked every %d s) until stopped.' % (
            params.train_dir, params.eval_interval_secs))
    last = restored[-1] if restored else None

    def restore_newer():
      nonlocal last
      latest = tf1.train.latest_checkpoint(params.train_dir)
      if latest is None or latest == last:
        return False
      last = checkpoints.restore_latest(sess, state.rc, built,
                                        state.reporter)
      return True
    loop.follow_checkpoints(restore_newer)


# Steps of the input-only probe that follows a real-data training loop.
_INPUT_PROBE_STEPS = 20
# Input alone faster than training by less than this factor: input-bound.
_INPUT_BOUND_RATIO = 1.2


def _input_bound(state, run_input_step):
  """Times the input pipeline alone, right after training, and says whether
  it could keep up: (its images/sec, was training input-bound?).

  Alone the pipeline has the whole machine; during training it shared it
  with the model, so a ratio near 1 means the model was waiting for data.
  """
  rc = state.rc
  steps = min(_INPUT_PROBE_STEPS, max(rc.num_batches, 5))
  run_input_step()  # the first pull may still pay for refilling buffers
  start = time.perf_counter()
  for _ in range(steps):
    run_input_step()
  rate = steps * rc.batch_size_per_worker / (time.perf_counter() - start)
  ratio = rate / max(state.times.total_images_per_sec(1), 1e-9)
  bound = ratio < _INPUT_BOUND_RATIO
  state.reporter.say(
      'Input pipeline alone: %.1f images/sec, %.1fx the training rate: %s'
      % (rate, ratio, 'training was input-bound' if bound
         else 'not input-bound'))
  return rate, bound
