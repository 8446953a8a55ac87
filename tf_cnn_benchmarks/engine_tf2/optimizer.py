"""The update of the tf2 engine: the mean gradient, applied with the graph
engine's own kernels.

The graph engine's optimizers are tf.compat.v1.train ones
(optimizers.make_optimizer); their update kernels are ResourceApply* ops.
Calling those same kernels here (rather than a Keras optimizer, whose
arithmetic differs in order) keeps both engines' weights equal step for
step, which the equivalence tests check. The learning rate is the graph
engine's schedule (optimizers.learning_rate) on the same global step.

Under a strategy the update is TensorFlow 2's usual one: from replica
context, ``merge_call`` into cross-replica context, ``batch_reduce_to``
MEAN over the replicas (every variable_update mode applies the mean of the
tower gradients), then ``extended.update`` of each variable on each of its
devices.
"""

import tensorflow as tf

from tf_cnn_benchmarks.training import optimizers

_ONLY_FIRST = tf.VariableAggregation.ONLY_FIRST_REPLICA


class Optimizer:
  """sgd or momentum (flag_checks.TF2_OPTIMIZERS) over ``variables``;
  build under the strategy's scope."""

  def __init__(self, rc, variables, loss_scale=None):
    """``loss_scale``: training/loss_scale.LossScale, or None."""
    params = rc.params
    self._rc = rc
    self._loss_scale = loss_scale
    self._momentum = params.momentum if params.optimizer == 'momentum' \
        else None
    self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False,
                                   name='global_step', aggregation=_ONLY_FIRST)
    # The momentum accumulators: the tf.compat.v1 MomentumOptimizer's slots.
    self._slots = [self._make_slot(v) if self._momentum is not None else None
                   for v in variables]

  @staticmethod
  def _make_slot(var):
    """``var``'s accumulator, on ``var``'s own device(s).

    ResourceApplyMomentum takes both handles, so both must be on one device.
    ParameterServerStrategy places each new variable round-robin over the ps
    tasks: a slot created on its own would land on the next ps in turn, not
    its variable's (with 2+ ps the first step fails: "Cannot place the
    graph ... colocation groups ... ps1 vs ps0"). colocate_vars_with is
    what TensorFlow's own slots use (training/slot_creator.py, Keras's
    optimizer): the strategy's own placement for it (its variable's ps; its
    devices under MirroredStrategy; a plain colocation otherwise).
    """
    with tf.distribute.get_strategy().extended.colocate_vars_with(var):
      return tf.Variable(tf.zeros(var.shape, var.dtype), trainable=False,
                         name=var.name.split(':')[0] + '/Momentum')

  def learning_rate(self):
    return optimizers.learning_rate(self._rc, self.global_step)

  def apply(self, grads_and_vars):
    """From replica context: every replica's gradients, meaned, applied."""
    return tf.distribute.get_replica_context().merge_call(
        self._apply_mean, args=(list(grads_and_vars),))

  def _apply_mean(self, strategy, grads_and_vars):
    reduced = strategy.extended.batch_reduce_to(
        tf.distribute.ReduceOp.MEAN, grads_and_vars)
    lr = self.learning_rate()

    def count_step():
      strategy.extended.update(self.global_step, lambda s: s.assign_add(1),
                               group=False)

    def apply():
      for grad, (_, var), slot in zip(reduced, grads_and_vars, self._slots):
        strategy.extended.update(var, self._apply_one,
                                 args=(grad, slot, lr), group=False)
      count_step()
    if self._loss_scale is None:
      apply()
      return
    # The mean is the same on every device: its first copy says whether
    # any replica's gradient was not finite.
    self._loss_scale.update_or_skip(
        [strategy.experimental_local_results(g)[0] for g in reduced], apply,
        count_step)

  def _apply_one(self, var, grad, slot, lr):
    """One device's copy of ``var`` (and of its slot)."""
    grad = tf.convert_to_tensor(grad)  # sparse (embedding) gradients too
    lr = tf.cast(lr, grad.dtype)
    if slot is None:
      return tf.raw_ops.ResourceApplyGradientDescent(
          var=var.handle, alpha=lr, delta=grad, use_locking=False)
    # The original's "momentum" is Nesterov momentum (training/optimizers.py).
    return tf.raw_ops.ResourceApplyMomentum(
        var=var.handle, accum=slot.handle, lr=lr, grad=grad,
        momentum=tf.constant(self._momentum, grad.dtype), use_locking=False,
        use_nesterov=True)
