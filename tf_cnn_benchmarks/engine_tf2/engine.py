"""The object driver.run calls for --engine=tf2 (driver.GraphEngine's twin).

``prepare`` runs before anything in a single process's run touches
TensorFlow's runtime (the virtual CPU devices of MirroredStrategy must exist
by then; a cluster task's runtime has started it, with its strategy);
``train`` builds the step and runs the core's step loop over it, then the
core's report and utilisation line. What the graph engine does besides
(checkpoints, evaluation, summaries, traces) is refused by flag_checks.py
for this engine, so none of it is silently skipped here.
"""

import types

from tf_cnn_benchmarks import driver
from tf_cnn_benchmarks import flag_specs
from tf_cnn_benchmarks import step_loop
from tf_cnn_benchmarks.engine_tf2 import strategies
from tf_cnn_benchmarks.engine_tf2 import train_step

# What step_loop.StepLoop reads of a graph engine's BuiltGraph: no accuracy
# columns, no global step (it reads it for summaries only).
_NO_GRAPH = types.SimpleNamespace(top_1_correct=None, global_step=None)


class _NoCheckpoints:
  """The step loop's checkpointer: --train_dir is graph-engine only."""

  def maybe_save(self, sess, step):
    del sess, step


class Tf2Engine:

  name = flag_specs.TF2_ENGINE

  def __init__(self, cluster_strategy=None):
    """``cluster_strategy()``: the strategies.Chosen of a cluster task,
    made by its runtime when it joined the cluster (cluster/
    tf2_runtime.py); None: a single process's, chosen from the flags."""
    self._cluster_strategy = cluster_strategy

  def prepare(self, rc):
    """A single process's devices, before TensorFlow's runtime starts. A
    cluster task's runtime started it already, with its strategy (and set
    the threads first): one replica per worker, no devices to make here."""
    if self._cluster_strategy is None:
      strategies.prepare_devices(rc)

  def train(self, params, rc, source, eval_source, runtime, times, reporter,
            watch, result):
    del eval_source  # evaluation during training: graph engine only
    # The runtime watches everything from the build on (a single
    # process's stall check; a cluster task's checks run from its begin,
    # its note on the way out is its running()'s); the trainer stands where
    # the graph engine's runtime calls get a session.
    with runtime.function_steps():
      with watch.phase('graph_build'):
        chosen = (self._cluster_strategy()
                  if self._cluster_strategy is not None
                  else strategies.choose(rc))
        trainer = train_step.Trainer(rc, chosen, source)
      runtime.attach_run(rc, result)
      reporter.header(rc, '%s (tf2 engine: tf.function, %s)' % (
          params.variable_update, chosen.name), source.description,
                      sync=driver.sync_description(rc))
      loop = step_loop.StepLoop(
          params, rc, _NO_GRAPH, train_step.StepRunner(trainer, runtime),
          times, reporter, watch, result, _NoCheckpoints())
      driver.time_steps(loop, rc, times, reporter, watch, result,
                        timing_starts=lambda: runtime.timing_starts(trainer))
      driver.report_utilisation(params, rc, trainer.gflops_per_image(),
                                times, reporter, result)
      runtime.report(trainer, reporter, times)


def run(params, reporter=None, rc=None):
  """driver.run with this engine (the library entry, as driver.run)."""
  return driver.run(params, reporter=reporter, rc=rc, engine=Tf2Engine())
