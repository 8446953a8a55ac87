"""TensorBoard summaries of a training run, in TensorBoard's own event format.

--summary_verbosity, as in the original:
  1: loss and learning rate every --save_summaries_steps steps, and
     images/sec;
  2: also the global norm of the gradients;
  3: also histograms of every trainable variable and of its gradient.
Written to --train_dir by TensorFlow's event writer (tf.compat.v1.summary.
FileWriter), so TensorBoard reads them as it reads any run. Tower 0's
gradients and variables stand for all towers (every mode applies the same
mean to every copy). At verbosity 0 nothing is built or fetched: a run
without summaries pays nothing for them.
"""

import tensorflow as tf

from tf_cnn_benchmarks.config import run_mode

tf1 = tf.compat.v1

LOSS, LEARNING_RATE, IMAGES_PER_SEC, GRADIENT_NORM = (
    'total_loss', 'learning_rate', 'images_per_sec', 'gradient_norm')
EVAL_TOP_1, EVAL_TOP_5 = 'eval/top_1_accuracy', 'eval/top_5_accuracy'


def build(verbosity, total_loss, learning_rate, grads_and_vars):
  """The merged summary op of one step (None at verbosity 0)."""
  if verbosity < 1:
    return None
  ops = [tf1.summary.scalar(LOSS, total_loss)]
  if learning_rate is not None:
    ops.append(tf1.summary.scalar(LEARNING_RATE, learning_rate))
  grads = [g for g, _ in grads_and_vars if g is not None]
  if verbosity >= 2 and grads:
    ops.append(tf1.summary.scalar(GRADIENT_NORM, tf.linalg.global_norm(grads)))
  if verbosity >= 3:
    for grad, var in grads_and_vars:
      name = var.op.name
      ops.append(tf1.summary.histogram(name, var))
      if grad is not None:
        ops.append(tf1.summary.histogram(name + '/gradient', grad))
  return tf1.summary.merge(ops)


def wanted(params):
  return params.summary_verbosity >= 1


class Writer:
  """When to fetch a step's summaries, and writing them (and images/sec,
  and evaluations). Training writes to --train_dir; --eval to --eval_dir."""

  def __init__(self, rc, built):
    params = rc.params
    self.every = params.save_summaries_steps
    self.op = built.summary_op
    evaluates = rc.mode is run_mode.RunMode.EVALUATION
    self.directory = params.eval_dir if evaluates else params.train_dir
    # TensorFlow's v1 writer refuses to be made in eager mode.
    with built.graph.as_default():
      self._writer = tf1.summary.FileWriter(self.directory, built.graph)

  def fetch(self, step):
    """The summary op when timed step ``step`` writes summaries, else None.
    """
    if self.op is None or not self.every or step % self.every:
      return None
    return self.op

  def _scalars(self, values, global_step):
    self._writer.add_summary(tf1.Summary(value=[
        tf1.Summary.Value(tag=tag, simple_value=value)
        for tag, value in values]), global_step)

  def write(self, summary, global_step, images_per_sec):
    self._writer.add_summary(summary, global_step)
    self._scalars([(IMAGES_PER_SEC, images_per_sec)], global_step)

  def write_evaluation(self, evaluation):
    self._scalars([(EVAL_TOP_1, evaluation.top_1_accuracy),
                   (EVAL_TOP_5, evaluation.top_5_accuracy)],
                  evaluation.global_step)
    self._writer.flush()

  def close(self):
    self._writer.close()
