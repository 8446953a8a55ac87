"""Layer builder on raw TensorFlow ops (tf.nn + tf.compat.v1 variables).

Why not Keras or tf.compat.v1.layers: with Keras 3 (TF >= 2.16) the v1 layers
raise "not available with Keras 3", and Keras layers would hide variable
creation from the variable managers. Every model in the zoo is written against
this one builder so that:

* the same code runs in graph mode on every TensorFlow 2.x we support;
* NHWC and NCHW are one switch (``data_format``), not two code paths;
* variables are created through ``tf.compat.v1.get_variable`` so a variable
  manager can place them (custom getters, device functions, per-tower scopes);
* compute can run in bfloat16/float16 while variables stay float32 (the cast
  happens when a variable is read, so master weights keep full precision).

Names matter: batch-norm parameters live under a scope called ``batchnorm``
so weight decay can exclude them by name, as the original tool did.
"""

import math

import tensorflow as tf

tf1 = tf.compat.v1

# Scope name that marks batch-norm parameters; weight decay skips them.
BATCHNORM_SCOPE = 'batchnorm'


class Builder:
  """Builds layers for one tower of one model.

  Args:
    data_format: 'NHWC' or 'NCHW', the layout of every 4-D activation.
    is_training: training graph (batch statistics, dropout on) or inference.
    compute_dtype: dtype of activations (float32, bfloat16 or float16).
    variable_dtype: dtype of the weights ``variable`` makes (float32, or
      the compute dtype for the original's --fp16_vars); batch norm's
      parameters and statistics are float32 whatever it is.
    batch_norm_decay / batch_norm_epsilon: defaults for ``batch_norm``.
  """

  def __init__(self, data_format='NHWC', is_training=True,
               compute_dtype=tf.float32, batch_norm_decay=0.997,
               batch_norm_epsilon=1e-5, variable_dtype=tf.float32):
    if data_format not in ('NHWC', 'NCHW'):
      raise ValueError('data_format must be NHWC or NCHW, got %r' % data_format)
    self.data_format = data_format
    self.is_training = is_training
    self.compute_dtype = tf.as_dtype(compute_dtype)
    self.variable_dtype = tf.as_dtype(variable_dtype)
    self.batch_norm_decay = batch_norm_decay
    self.batch_norm_epsilon = batch_norm_epsilon
    self.channel_axis = 3 if data_format == 'NHWC' else 1
    # Names of the layers created, to give each one a unique default scope.
    self._counts = {}

  # -- naming and variables ------------------------------------------------

  def _unique(self, prefix):
    n = self._counts.get(prefix, 0)
    self._counts[prefix] = n + 1
    return '%s%d' % (prefix, n)

  def variable(self, name, shape, initializer, trainable=True):
    """Creates a variable of the variable dtype, returned cast to the
    compute dtype."""
    var = tf1.get_variable(name, shape=shape, dtype=self.variable_dtype,
                           initializer=initializer, trainable=trainable)
    if self.compute_dtype != self.variable_dtype:
      return tf.cast(var, self.compute_dtype)
    return var

  # -- shape helpers -------------------------------------------------------

  def channels(self, x):
    return int(x.shape[self.channel_axis])

  def spatial(self, x):
    """(height, width) of a 4-D activation."""
    if self.data_format == 'NHWC':
      return int(x.shape[1]), int(x.shape[2])
    return int(x.shape[2]), int(x.shape[3])

  def _window(self, size, stride):
    """Window/stride lists in this builder's layout."""
    kh, kw = (size, size) if isinstance(size, int) else size
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    if self.data_format == 'NHWC':
      return [1, kh, kw, 1], [1, sh, sw, 1]
    return [1, 1, kh, kw], [1, 1, sh, sw]

  def to_layout(self, images_nhwc):
    """Transposes NHWC input images to this builder's layout."""
    if self.data_format == 'NCHW':
      return tf.transpose(images_nhwc, [0, 3, 1, 2])
    return images_nhwc

  def concat(self, tensors):
    return tf.concat(tensors, axis=self.channel_axis)

  def split(self, x, num_or_sizes):
    return tf.split(x, num_or_sizes, axis=self.channel_axis)

  # -- layers --------------------------------------------------------------

  def activation(self, x, kind):
    if kind is None or kind == 'linear':
      return x
    if kind == 'relu':
      return tf.nn.relu(x)
    if kind == 'relu6':
      return tf.nn.relu6(x)
    if kind == 'tanh':
      return tf.nn.tanh(x)
    raise ValueError('unknown activation %r' % kind)

  def conv(self, x, filters, kernel, stride=1, padding='SAME',
           activation='relu', use_bias=None, batch_norm=False,
           dilation=1, stddev=None, name=None):
    """2-D convolution (+ bias or batch norm) (+ activation).

    ``kernel`` and ``stride`` are an int or an (h, w) pair. ``padding`` is
    'SAME', 'VALID' or an int for explicit symmetric zero padding followed by
    a VALID convolution (the ResNet "fixed padding"). A bias is added unless
    batch norm follows (which has its own offset), unless ``use_bias`` says.
    """
    if use_bias is None:
      use_bias = not batch_norm
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    in_ch = self.channels(x)
    with tf1.variable_scope(name or self._unique('conv')):
      if stddev is None:
        # He (variance-scaling, fan-in) initialisation for ReLU networks.
        init = tf1.variance_scaling_initializer(scale=2.0, mode='fan_in',
                                                distribution='truncated_normal')
      else:
        init = tf1.truncated_normal_initializer(stddev=stddev)
      kernel_var = self.variable('kernel', [kh, kw, in_ch, filters], init)
      if isinstance(padding, int):
        x = self.pad(x, padding)
        padding = 'VALID'
      _, strides = self._window(1, stride)
      dilations = [1, 1, 1, 1] if dilation == 1 else self._window(
          dilation, 1)[0]
      y = tf.nn.conv2d(x, kernel_var, strides=strides, padding=padding,
                       data_format=self.data_format, dilations=dilations)
      if use_bias:
        bias = self.variable('bias', [filters], tf1.zeros_initializer())
        y = tf.nn.bias_add(y, bias, data_format=self.data_format)
      if batch_norm:
        y = self.batch_norm(y)
      return self.activation(y, activation)

  def depthwise_conv(self, x, kernel, stride=1, padding='SAME',
                     depth_multiplier=1, activation='relu', batch_norm=True,
                     name=None):
    """Depthwise 2-D convolution (+ batch norm) (+ activation)."""
    in_ch = self.channels(x)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    with tf1.variable_scope(name or self._unique('dwconv')):
      init = tf1.variance_scaling_initializer(scale=2.0, mode='fan_in',
                                              distribution='truncated_normal')
      kernel_var = self.variable('depthwise_kernel',
                                 [kh, kw, in_ch, depth_multiplier], init)
      _, strides = self._window(1, stride)
      y = tf.nn.depthwise_conv2d(x, kernel_var, strides=strides,
                                 padding=padding,
                                 data_format=self.data_format)
      if batch_norm:
        y = self.batch_norm(y)
      else:
        bias = self.variable('bias', [in_ch * depth_multiplier],
                             tf1.zeros_initializer())
        y = tf.nn.bias_add(y, bias, data_format=self.data_format)
      return self.activation(y, activation)

  def separable_conv(self, x, filters, kernel, stride=1, padding='SAME',
                     activation=None, batch_norm=True, name=None):
    """Depthwise then pointwise convolution, batch norm once at the end.

    This is the NASNet/Xception form: no activation or batch norm between the
    depthwise and the pointwise step.
    """
    with tf1.variable_scope(name or self._unique('sepconv')):
      y = self.depthwise_conv(x, kernel, stride=stride, padding=padding,
                              activation=None, batch_norm=False,
                              name='depthwise')
      return self.conv(y, filters, 1, activation=activation,
                       batch_norm=batch_norm, name='pointwise')

  def separable_conv_bn(self, x, filters, kernel, stride=1, padding='SAME',
                        name=None):
    """Depthwise then pointwise convolution, no biases, then batch norm.

    The TF-slim/keras NASNet form that published NASNet parameter counts
    assume. Unlike ``separable_conv`` no depthwise bias is created: the
    pointwise step is linear and batch norm's offset follows, so a bias there
    would be redundant. No activation (NASNet applies ReLU before, not after).
    """
    in_ch = self.channels(x)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    with tf1.variable_scope(name or self._unique('sepconv_bn')):
      # Each depthwise output sees kh * kw inputs and no ReLU follows.
      depthwise_init = tf1.truncated_normal_initializer(
          stddev=math.sqrt(1.0 / (kh * kw)))
      pointwise_init = tf1.variance_scaling_initializer(
          scale=2.0, mode='fan_in', distribution='truncated_normal')
      depthwise = self.variable('depthwise_kernel', [kh, kw, in_ch, 1],
                                depthwise_init)
      pointwise = self.variable('pointwise_kernel', [1, 1, in_ch, filters],
                                pointwise_init)
      _, strides = self._window(1, stride)
      y = tf.nn.separable_conv2d(x, depthwise, pointwise, strides=strides,
                                 padding=padding,
                                 data_format=self.data_format)
      return self.batch_norm(y)

  def pad(self, x, total_or_pair):
    """Symmetric zero padding of the spatial dims by ``total`` pixels.

    An int p pads p // 2 before and p - p // 2 after (the TF-slim "fixed
    padding" for a kernel of size p + 1); a pair pads (before, after).
    """
    if isinstance(total_or_pair, int):
      before, after = total_or_pair // 2, total_or_pair - total_or_pair // 2
    else:
      before, after = total_or_pair
    spatial = [[before, after], [before, after]]
    if self.data_format == 'NHWC':
      paddings = [[0, 0]] + spatial + [[0, 0]]
    else:
      paddings = [[0, 0], [0, 0]] + spatial
    return tf.pad(x, paddings)

  def max_pool(self, x, size, stride, padding='VALID'):
    ksize, strides = self._window(size, stride)
    return tf.nn.max_pool2d(x, ksize, strides, padding,
                            data_format=self.data_format)

  def avg_pool(self, x, size, stride, padding='VALID'):
    ksize, strides = self._window(size, stride)
    return tf.nn.avg_pool2d(x, ksize, strides, padding,
                            data_format=self.data_format)

  def global_avg_pool(self, x):
    """Mean over the spatial dims, returned as [batch, channels]."""
    axes = [1, 2] if self.data_format == 'NHWC' else [2, 3]
    return tf.reduce_mean(x, axis=axes)

  def flatten(self, x):
    """[batch, ...] -> [batch, features], in NHWC order for either layout.

    Flattening in one fixed order keeps the dense layer's weights (and the
    parameter count) the same whichever layout the convolutions used.
    """
    if len(x.shape) == 4 and self.data_format == 'NCHW':
      x = tf.transpose(x, [0, 2, 3, 1])
    size = 1
    for d in x.shape[1:]:
      size *= int(d)
    return tf.reshape(x, [-1, size])

  def dense(self, x, units, activation='relu', use_bias=True, stddev=None,
            name=None):
    """Fully connected layer on a [batch, features] tensor."""
    if len(x.shape) != 2:
      x = self.flatten(x)
    in_units = int(x.shape[1])
    with tf1.variable_scope(name or self._unique('dense')):
      if stddev is None:
        init = tf1.variance_scaling_initializer(scale=1.0, mode='fan_in',
                                                distribution='truncated_normal')
      else:
        init = tf1.truncated_normal_initializer(stddev=stddev)
      w = self.variable('kernel', [in_units, units], init)
      y = tf.matmul(x, w)
      if use_bias:
        b = self.variable('bias', [units], tf1.zeros_initializer())
        y = tf.nn.bias_add(y, b)
      return self.activation(y, activation)

  def batch_norm(self, x, decay=None, epsilon=None, scale=True, center=True,
                 name=None):
    """Fused batch normalisation over the channel axis.

    In training the batch statistics normalise and the moving averages are
    updated through ops in the UPDATE_OPS collection (the driver decides
    which tower runs them); in inference the moving averages normalise.
    Statistics are kept in float32 even when compute is bfloat16.
    """
    decay = self.batch_norm_decay if decay is None else decay
    epsilon = self.batch_norm_epsilon if epsilon is None else epsilon
    ch = self.channels(x)
    with tf1.variable_scope(name or BATCHNORM_SCOPE):
      # Parameters are read in float32: fused batch norm takes float32
      # scale/offset/statistics whatever the activation dtype.
      gamma = tf1.get_variable('gamma', [ch], tf.float32,
                               tf1.ones_initializer(), trainable=scale)
      beta = tf1.get_variable('beta', [ch], tf.float32,
                              tf1.zeros_initializer(), trainable=center)
      moving_mean = tf1.get_variable('moving_mean', [ch], tf.float32,
                                     tf1.zeros_initializer(), trainable=False)
      moving_var = tf1.get_variable('moving_variance', [ch], tf.float32,
                                    tf1.ones_initializer(), trainable=False)
      if self.is_training:
        y, mean, var = tf1.nn.fused_batch_norm(
            x, gamma, beta, epsilon=epsilon, data_format=self.data_format,
            is_training=True)
        for stat_var, value in ((moving_mean, mean), (moving_var, var)):
          tf1.add_to_collection(tf1.GraphKeys.UPDATE_OPS,
                                _moving_average_update(stat_var, value, decay))
      else:
        y, _, _ = tf1.nn.fused_batch_norm(
            x, gamma, beta, mean=moving_mean, variance=moving_var,
            epsilon=epsilon, data_format=self.data_format, is_training=False)
      return y

  def lrn(self, x, depth_radius, bias, alpha, beta):
    """Local response normalisation (AlexNet/GoogLeNet); runs in NHWC."""
    if self.data_format == 'NCHW':
      x = tf.transpose(x, [0, 2, 3, 1])
      x = tf.nn.lrn(x, depth_radius, bias, alpha, beta)
      return tf.transpose(x, [0, 3, 1, 2])
    return tf.nn.lrn(x, depth_radius, bias, alpha, beta)

  def dropout(self, x, keep_prob=0.5):
    if not self.is_training or keep_prob >= 1.0:
      return x
    return tf.nn.dropout(x, rate=1.0 - keep_prob)


def _moving_average_update(stat_var, value, decay):
  """stat_var -= (stat_var - value) * (1 - decay), computed beside stat_var.

  Written out (not assign_moving_average) so it works on any variable kind
  a variable manager hands back (resource or ref). The colocation puts the
  arithmetic where the variable lives, overriding the tower's device
  function: with the variable on a parameter server only the batch
  statistic crosses to it, instead of the variable's value coming to the
  worker and the delta going back (one tensor per statistic per step, not
  two; benchmarks/step_profile.py counts them). Local modes are unchanged:
  there the variable is on the tower's own device.
  """
  if tf.inside_function():
    # The tf2 engine (a tf.function under a strategy): the strategy places
    # the variable and its update; a distributed variable has no single op
    # to sit beside.
    return tf1.assign_sub(stat_var, (stat_var - value) * (1 - decay))
  with tf1.get_default_graph().colocate_with(stat_var):
    # A fresh read, here: the variable's value() may be a cached copy on
    # the worker.
    return tf1.assign_sub(stat_var,
                          (stat_var.read_value() - value) * (1 - decay))
