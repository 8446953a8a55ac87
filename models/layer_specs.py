"""Networks written as data: layer specs and the code that builds them.

The classic and inception models are tables in their papers, so they are
written as tables here too and one interpreter builds them with the Builder:

* a stack is a list of layer specs applied in order;
* ``Mixed`` is a list of branches (stacks) that read the same input, their
  outputs concatenated along channels (an inception module). A ``Mixed`` may
  sit inside a branch, which is how the v3/v4 "expanded filter bank" (a 1x3
  and a 3x1 conv reading the same input) is expressed.

Whether convolutions use batch norm (no bias) or a bias is a property of the
whole network, so it is passed to the interpreter rather than repeated in
every spec.
"""

import collections

import tensorflow as tf

tf1 = tf.compat.v1

# stddev None means the builder's default (He) initialisation.
Conv = collections.namedtuple('Conv', 'filters kernel stride padding stddev')
Conv.__new__.__defaults__ = (1, 'SAME', None)
MaxPool = collections.namedtuple('MaxPool', 'size stride padding')
MaxPool.__new__.__defaults__ = ('VALID',)
AvgPool = collections.namedtuple('AvgPool', 'size stride padding')
AvgPool.__new__.__defaults__ = ('VALID',)
# Local response normalisation (tf.nn.lrn arguments).
Lrn = collections.namedtuple('Lrn', 'depth_radius bias alpha beta')
Mixed = collections.namedtuple('Mixed', 'branches name')
Mixed.__new__.__defaults__ = (None,)


def apply_layer(b, x, layer, batch_norm=False):
  """Builds one spec on ``x``; ``batch_norm`` applies to convolutions."""
  if isinstance(layer, Conv):
    return b.conv(x, layer.filters, layer.kernel, layer.stride,
                  layer.padding, batch_norm=batch_norm, stddev=layer.stddev)
  if isinstance(layer, MaxPool):
    return b.max_pool(x, layer.size, layer.stride, layer.padding)
  if isinstance(layer, AvgPool):
    return b.avg_pool(x, layer.size, layer.stride, layer.padding)
  if isinstance(layer, Lrn):
    return b.lrn(x, layer.depth_radius, layer.bias, layer.alpha, layer.beta)
  if isinstance(layer, Mixed):
    return apply_mixed(b, x, layer, batch_norm)
  raise TypeError('not a layer spec: %r' % (layer,))


def apply_stack(b, x, layers, batch_norm=False):
  for layer in layers:
    x = apply_layer(b, x, layer, batch_norm)
  return x


def apply_mixed(b, x, mixed, batch_norm=False):
  """Runs every branch on ``x`` and concatenates them along channels."""
  with tf1.variable_scope(mixed.name, default_name='mixed'):
    outputs = []
    for index, branch in enumerate(mixed.branches):
      with tf1.variable_scope('branch_%d' % index):
        outputs.append(apply_stack(b, x, branch, batch_norm))
    return b.concat(outputs)


def fully_connected(b, x, units, keep_prob=1.0, stddev=None):
  """Hidden dense ReLU layers, each followed by dropout (no-op at 1.0)."""
  for width in units:
    x = b.dropout(b.dense(x, width, stddev=stddev), keep_prob)
  return x


def logits(b, x, num_classes, stddev=None):
  """The linear classifier every model ends with."""
  return b.dense(x, num_classes, activation='linear', stddev=stddev,
                 name='logits')
