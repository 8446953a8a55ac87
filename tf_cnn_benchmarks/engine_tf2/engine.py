"""The object driver.run calls for --engine=tf2 (engine_graph/engine.py's
twin).

``prepare`` runs before anything in a single process's run touches
TensorFlow's runtime (the virtual CPU devices of MirroredStrategy must exist
by then; a cluster task's runtime has started it, with its strategy);
``train`` builds the step and runs run/'s step loop over it, then the
report and utilisation line, with evaluation during training
(evaluation.py) when the flags ask for it. What else the graph engine does
(checkpoints, summaries, traces) is refused by config/flag_checks.py for
this engine, so none of it is silently skipped here.
"""

from tf_cnn_benchmarks.config import flag_specs
from tf_cnn_benchmarks.engine_tf2 import evaluation
from tf_cnn_benchmarks.engine_tf2 import strategies
from tf_cnn_benchmarks.engine_tf2 import train_step
from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.run import report
from tf_cnn_benchmarks.run import step_loop


class Tf2Engine:
  """--engine=tf2 (contracts.Engine)."""

  name = flag_specs.TF2_ENGINE

  def __init__(self, cluster_strategy=None):
    """``cluster_strategy()``: the strategies.Chosen of a cluster task,
    made by its runtime when it joined the cluster (cluster/task/
    tf2_runtime.py); None: a single process's, chosen from the flags."""
    self._cluster_strategy = cluster_strategy

  def prepare(self, rc):
    """A single process's devices, before TensorFlow's runtime starts. A
    cluster task's runtime started it already, with its strategy (and set
    the threads first): one replica per worker, no devices to make here."""
    if self._cluster_strategy is None:
      strategies.prepare_devices(rc)

  def train(self, state, source, eval_source):
    rc, runtime = state.rc, state.runtime
    # The runtime watches everything from the build on (a single
    # process's stall check; a cluster task's checks run from its begin,
    # its note on the way out is its running()'s); the trainer stands where
    # the graph engine's runtime calls get a session.
    with runtime.function_steps():
      with state.watch.phase('graph_build'):
        chosen = (self._cluster_strategy()
                  if self._cluster_strategy is not None
                  else strategies.choose(rc))
        trainer = train_step.Trainer(rc, chosen, source)
        evaluator = (evaluation.Evaluator(rc, chosen.strategy, eval_source,
                                          trainer)
                     if eval_source is not None else None)
      runtime.attach_run(rc, state.result)
      state.reporter.header(rc, '%s (tf2 engine: tf.function, %s)' % (
          rc.params.variable_update, chosen.name), source.description,
                            sync=report.sync_description(rc))
      loop = step_loop.StepLoop(
          state, train_step.FunctionStepRunner(trainer, runtime),
          evaluation.Tf2Extras(state, trainer, evaluator))
      driver.time_steps(state, loop,
                        timing_starts=lambda: runtime.timing_starts(trainer))
      state.result.utilisation = driver.utilisation(
          state, trainer.gflops_per_image())
      runtime.report(trainer, state.reporter, state.times)


def run(params, reporter=None, rc=None, runtime=None):
  """driver.run with this engine (the library entry, as driver.run)."""
  return driver.run(params, Tf2Engine(), reporter=reporter, rc=rc,
                    runtime=runtime)
