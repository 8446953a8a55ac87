"""Loss scaling for half-precision training: the original's rule, both engines.

float16 holds magnitudes down to about 6e-8; many gradients of a float16
network are smaller and would flush to zero. Multiplying the loss by a scale
S before the backward pass multiplies every gradient by S; dividing the
gradients by S afterwards gives the true gradients back, computed where
float16 could hold them.

A fixed scale (--fp16_loss_scale) does only that. The automatic scale
(--fp16_enable_auto_loss_scale) also adjusts S, as the original did:

* a step whose gradients are not all finite is skipped (no weight or
  optimizer slot moves; the global step still counts it, and batch norm's
  moving statistics, from the finite forward pass, move as in the
  original), S halves and the count of good steps restarts;
* a step with finite gradients is applied; when the count already reached
  N (--fp16_inc_loss_scale_every_n), S doubles and the count restarts, else
  the count grows. So S doubles on the (N+1)-th good step in a row.

Why not TensorFlow's own LossScaleOptimizer (keras.mixed_precision in
TensorFlow 2.21): it wraps a keras.optimizers.Optimizer, and neither engine
applies one (the graph engine's are tf.compat.v1.train optimizers, the tf2
engine calls their ResourceApply* kernels so both engines' weights agree
step for step); Keras 3's has no fixed scale (dynamic=False is gone); and it
doubles on the N-th good step, one before the original. So the rule is
here, once, for both engines.
"""

import tensorflow as tf

tf1 = tf.compat.v1

SCALE_NAME = 'loss_scale'
COUNT_NAME = 'loss_scale_normal_steps'


class LossScale:
  """The scale (and, automatic, the count of good steps) of one run, as
  variables; build the graph engine's with ``in_graph`` and the tf2
  engine's with ``in_strategy``."""

  def __init__(self, scaling, scale, good_steps):
    self.scaling = scaling
    self.scale = scale            # float32 variable
    self.good_steps = good_steps  # int32 variable, or None (fixed scale)

  @classmethod
  def in_graph(cls, scaling, device):
    """The graph engine's: a fixed scale is a constant; an automatic one
    tf.compat.v1 variables on ``device`` (the parameter device: one scale
    for every tower), local ones: no checkpoint holds them, so a resumed
    run starts again from the initial scale."""
    if not scaling.automatic:
      return cls(scaling, tf.constant(scaling.initial, tf.float32), None)
    local = [tf1.GraphKeys.LOCAL_VARIABLES]
    with tf1.device(device):
      scale = tf1.Variable(scaling.initial, dtype=tf.float32,
                           trainable=False, name=SCALE_NAME,
                           collections=local)
      count = tf1.Variable(0, dtype=tf.int32, trainable=False,
                           name=COUNT_NAME, collections=local)
    return cls(scaling, scale, count)

  @classmethod
  def in_strategy(cls, scaling):
    """The tf2 engine's: a constant, or variables of the current
    tf.distribute strategy's scope, written in cross-replica context only
    (one value for every replica)."""
    if not scaling.automatic:
      return cls(scaling, tf.constant(scaling.initial, tf.float32), None)
    first = tf.VariableAggregation.ONLY_FIRST_REPLICA
    scale = tf.Variable(scaling.initial, dtype=tf.float32, trainable=False,
                        name=SCALE_NAME, aggregation=first)
    count = tf.Variable(0, dtype=tf.int32, trainable=False,
                        name=COUNT_NAME, aggregation=first)
    return cls(scaling, scale, count)

  @property
  def automatic(self):
    return self.scaling.automatic

  def scaled(self, loss):
    return loss * tf.cast(self.scale, loss.dtype)

  def unscaled(self, grads):
    """Each gradient times 1/S, in its own dtype (None stays None)."""
    inverse = 1.0 / self.scale
    return [None if g is None else _times(g, tf.cast(inverse, g.dtype))
            for g in grads]

  def update_or_skip(self, grads, apply, skip):
    """The step's update op: ``apply()`` and the scale's growth rule when
    every gradient of ``grads`` is finite, else ``skip()`` and the halving.
    A fixed scale has no rule: ``apply()``."""
    if not self.automatic:
      return apply()
    finite = all_finite(grads)

    def applied():
      with tf.control_dependencies(_ops(apply())):
        return _grow_or_count(self.scale, self.good_steps,
                              self.scaling.grow_every_n)

    def skipped():
      with tf.control_dependencies(_ops(skip())):
        return tf.group(self.scale.assign(self.scale / 2.0),
                        self.good_steps.assign(0))
    return tf.cond(finite, applied, skipped)


def _grow_or_count(scale, good_steps, grow_every_n):
  """A good step: double S (and restart the count) once the count reached
  N, else count it."""
  def grow():
    return tf.group(scale.assign(scale * 2.0), good_steps.assign(0))

  def count():
    return tf.group(good_steps.assign_add(1))
  return tf.cond(good_steps < grow_every_n, count, grow)


def all_finite(grads):
  """One boolean: no gradient holds an inf or a NaN."""
  checks = [tf.reduce_all(tf.math.is_finite(
      g.values if isinstance(g, tf.IndexedSlices) else g))
            for g in grads if g is not None]
  return tf.reduce_all(tf.stack(checks))


def _times(grad, factor):
  if isinstance(grad, tf.IndexedSlices):
    return tf.IndexedSlices(grad.values * factor, grad.indices,
                            grad.dense_shape)
  return grad * factor


def _ops(result):
  """What to wait for of an apply/skip result (an op, a tensor or a list of
  them, or None)."""
  if result is None:
    return []
  if isinstance(result, (list, tuple)):
    return [r for r in result if r is not None]
  return [result]
