"""Evaluation during training for --engine=tf2 (engine_graph/step_extras.py's
Evaluator, as a tf.function).

At the steps run/evaluation.py's schedule names, training pauses and the
validation split goes through the model in inference mode (batch norm with
its moving statistics, no dropout), reading the training variables through
the run's variable store, one batch per replica: rc.eval_steps steps of
--eval_batch_size per device, the correct top-1/top-5 predictions summed
over the replicas. A single process only (flag_checks refuses it in a
cluster, for both engines).
"""

import tensorflow as tf

from tf_cnn_benchmarks.engine_tf2 import inputs
from tf_cnn_benchmarks.run import evaluation
from tf_cnn_benchmarks.run import step_loop
from tf_cnn_benchmarks.training import towers


class Evaluator:
  """Runs the evaluations of a training run under its strategy."""

  def __init__(self, rc, strategy, eval_source, trainer):
    self._rc = rc
    self._strategy = strategy
    self._trainer = trainer
    self._iterator = inputs.distributed_iterator(strategy, rc, eval_source)
    self._due = set(evaluation.schedule(
        rc.params, rc.num_batches,
        rc.examples_per_epoch / float(rc.global_batch_size)))
    self._step = tf.function(self._step_fn, autograph=False)

  def _replica(self, images, labels):
    with self._trainer.store.reusing():
      logits, _ = towers.forward(self._rc, images, False)
    return (towers.correct_in_top_k(logits, labels, 1),
            towers.correct_in_top_k(logits, labels, 5))

  def _step_fn(self, iterator):
    images, labels = next(iterator)
    top_1, top_5 = self._strategy.run(self._replica, args=(images, labels))
    total = tf.distribute.ReduceOp.SUM
    return (self._strategy.reduce(total, top_1, axis=None),
            self._strategy.reduce(total, top_5, axis=None))

  def due(self, step):
    return step in self._due

  def run(self, step, reporter):
    global_step = self._trainer.global_step()
    reporter.say('Running evaluation at global step %d' % global_step)
    correct_1 = correct_5 = 0
    for _ in range(self._rc.eval_steps):
      top_1, top_5 = self._step(self._iterator)
      correct_1 += int(top_1)
      correct_5 += int(top_5)
    examples = self._rc.eval_steps * self._rc.eval_batch_size_per_worker
    return evaluation.Evaluation(step, global_step, correct_1 / examples,
                                 correct_5 / examples, examples)


class Tf2Extras(step_loop.NoExtras):
  """The tf2 engine's contracts.StepExtras: evaluation during training;
  nothing else happens between its steps."""

  def __init__(self, state, trainer, evaluator=None):
    self._state = state
    self._trainer = trainer
    self._evaluator = evaluator

  def evaluation_due(self, step):
    return self._evaluator is not None and self._evaluator.due(step)

  def evaluate(self, step):
    return self._evaluator.run(step, self._state.reporter)

  def global_step(self):
    return self._trainer.global_step()
