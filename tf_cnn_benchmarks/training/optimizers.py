"""Learning-rate schedule and optimizer from Params.

Schedules are given in epochs (as the original's flags are) and turned into
step boundaries with the global batch size and the dataset's epoch size.
"""

import tensorflow as tf

tf1 = tf.compat.v1


def learning_rate(rc, global_step):
  """The learning-rate tensor of run config ``rc`` for ``global_step``."""
  params, global_batch_size = rc.params, rc.global_batch_size
  initial = rc.initial_learning_rate
  steps_per_epoch = max(1.0, rc.examples_per_epoch / float(global_batch_size))
  step = tf.cast(global_step, tf.float32)
  if rc.piecewise_schedule is not None:
    rates, bounds = rc.piecewise_schedule
    boundaries = [int(b * steps_per_epoch) for b in bounds]
    lr = tf1.train.piecewise_constant(global_step, boundaries, rates)
  else:
    lr = tf.constant(initial, tf.float32)
    if params.num_epochs_per_decay > 0:
      decay_steps = params.num_epochs_per_decay * steps_per_epoch
      lr = initial * tf.pow(params.learning_rate_decay_factor,
                            tf.floor(step / decay_steps))
  if params.minimum_learning_rate > 0:
    lr = tf.maximum(lr, params.minimum_learning_rate)
  if params.num_learning_rate_warmup_epochs > 0:
    warmup_steps = params.num_learning_rate_warmup_epochs * steps_per_epoch
    warm = initial * step / warmup_steps
    lr = tf.where(step < warmup_steps, warm, lr)
  return tf.cast(lr, tf.float32)


def make_optimizer(params, lr):
  if params.optimizer == 'sgd':
    return tf1.train.GradientDescentOptimizer(lr)
  if params.optimizer == 'momentum':
    # The original's "momentum" was Nesterov momentum; keep its meaning.
    return tf1.train.MomentumOptimizer(lr, params.momentum, use_nesterov=True)
  if params.optimizer == 'rmsprop':
    return tf1.train.RMSPropOptimizer(
        lr, decay=params.rmsprop_decay, momentum=params.rmsprop_momentum,
        epsilon=params.rmsprop_epsilon)
  if params.optimizer == 'adam':
    return tf1.train.AdamOptimizer(lr, params.adam_beta1, params.adam_beta2,
                                   params.adam_epsilon)
  raise ValueError('unknown optimizer %r' % params.optimizer)
