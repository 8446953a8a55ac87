"""parameter_server: one copy of each variable on the parameter device.

Every tower reads the same variables; tower gradients are averaged on the
variable's device and applied once.
"""

import contextlib

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import base

tf1 = tf.compat.v1

# Op types that create a variable (what a device function places on the
# parameter device).
VARIABLE_OPS = ('Variable', 'VariableV2', 'VarHandleOp')


class ParameterServerManager(base.VariableManager):
  name = 'parameter_server'
  per_tower_copies = False

  def _device_function(self, tower_device):
    param_device = self.rc.param_device

    def place(op):
      return param_device if op.type in VARIABLE_OPS else tower_device

    return place

  # Where each variable's value is read once per step and kept for every
  # use of it (None: each use reads the variable where it lives).
  caching_device = None

  @contextlib.contextmanager
  def tower_scope(self, index):
    with tf1.device(self._device_function(self.towers[index])), \
        tf1.variable_scope('v0', reuse=index > 0,
                           custom_getter=self._getter()):
      yield

  def _getter(self):
    """The seeded getter, caching the trainable variables' reads.

    Only trainable variables are cached: the towers read them every step.
    The others (batch-norm moving statistics) are not read by a training
    step's towers at all; their update runs beside them
    (models/layers.py), and a cached copy would still be read and sent
    every step, since an assignment waits for the cache's read.
    """
    seeded = base.seeded_initializer_getter(self.seed)
    cache = self.caching_device

    # TensorFlow passes the next getter as the keyword argument `getter`.
    def caching_getter(getter, name, *args, **kwargs):
      if cache is not None and kwargs.get('trainable') is not False:
        kwargs['caching_device'] = cache
      return seeded(getter, name, *args, **kwargs)

    return caching_getter

  def apply_gradients(self, tower_grads, optimizer, global_step):
    averaged = []
    for pairs in zip(*tower_grads):
      var = pairs[0][1]
      with tf1.device(var.device):
        averaged.append((base.mean_of([g for g, _ in pairs]), var))
    return optimizer.apply_gradients(averaged, global_step=global_step)
