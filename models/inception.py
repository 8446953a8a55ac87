"""Inception v3 and v4.

References:
  Szegedy et al. 2015, "Rethinking the Inception Architecture for Computer
  Vision" (Inception v3, figures 5-7 and table 1).
  Szegedy et al. 2016, "Inception-v4, Inception-ResNet and the Impact of
  Residual Connections on Learning" (Inception-v4, figures 3-9).

Both networks are tables of ``layer_specs`` (a stack is a list of layers, a
``Mixed`` module a list of branches concatenated on channels), so each module
below reads like the figure it comes from.

Both nets use batch norm after every convolution and no conv biases, as the
TF-slim versions do. The builder's batch norm has a trainable scale (gamma);
TF-slim and the original tool left the scale out (it is redundant before a
ReLU). Keeping it costs 18,112 parameters in inception3 (0.07 %) and makes the
count equal torchvision's published figure, which also trains the scale.
"""

import tensorflow as tf

from models import registry
from models.layer_specs import (AvgPool, Conv, MaxPool, Mixed, apply_stack,
                                logits)

tf1 = tf.compat.v1


def classifier(b, x, num_classes, keep_prob):
  """Global average pool, dropout, linear logits (the inception heads)."""
  x = b.global_avg_pool(x)
  return logits(b, b.dropout(x, keep_prob), num_classes)


# -- Inception v3 --------------------------------------------------------------
# Shapes in the comments are for a 299x299 input (height x width x channels).

V3_STEM = [
    Conv(32, 3, 2, 'VALID'),   # 149x149x32
    Conv(32, 3, 1, 'VALID'),   # 147x147x32
    Conv(64, 3),               # 147x147x64
    MaxPool(3, 2),             # 73x73x64
    Conv(80, 1, 1, 'VALID'),   # 73x73x80
    Conv(192, 3, 1, 'VALID'),  # 71x71x192
    MaxPool(3, 2),             # 35x35x192
]


def v3_module_35(pool_filters, name):
  """Figure 5: the 5x5 branch, and a 5x5 factorised into two 3x3."""
  return Mixed([
      [Conv(64, 1)],
      [Conv(48, 1), Conv(64, 5)],
      [Conv(64, 1), Conv(96, 3), Conv(96, 3)],
      [AvgPool(3, 1, 'SAME'), Conv(pool_filters, 1)],
  ], name)


# Grid reduction 35 -> 17 (figure 10): strided convs beside a strided pool.
V3_REDUCTION_35 = Mixed([
    [Conv(384, 3, 2, 'VALID')],
    [Conv(64, 1), Conv(96, 3), Conv(96, 3, 2, 'VALID')],
    [MaxPool(3, 2)],
], 'mixed_6a')


def v3_module_17(width, name):
  """Figure 6: n x n convolutions factorised into 1x7 and 7x1 (n = 7)."""
  return Mixed([
      [Conv(192, 1)],
      [Conv(width, 1), Conv(width, (1, 7)), Conv(192, (7, 1))],
      [Conv(width, 1), Conv(width, (7, 1)), Conv(width, (1, 7)),
       Conv(width, (7, 1)), Conv(192, (1, 7))],
      [AvgPool(3, 1, 'SAME'), Conv(192, 1)],
  ], name)


V3_REDUCTION_17 = Mixed([
    [Conv(192, 1), Conv(320, 3, 2, 'VALID')],
    [Conv(192, 1), Conv(192, (1, 7)), Conv(192, (7, 1)),
     Conv(192, 3, 2, 'VALID')],
    [MaxPool(3, 2)],
], 'mixed_7a')


def split_1x3_3x1(filters):
  """The expanded filter bank: 1x3 and 3x1 convs side by side on one input."""
  return Mixed([[Conv(filters, (1, 3))], [Conv(filters, (3, 1))]])


def v3_module_8(pool, name):
  """Figure 7: the 8x8 modules with expanded filter banks.

  The original tool (following Google's first released v3 graph) pools with
  max in the last module and average in the one before; TF-slim averages in
  both. Parameters are the same either way.
  """
  return Mixed([
      [Conv(320, 1)],
      [Conv(384, 1), split_1x3_3x1(384)],
      [Conv(448, 1), Conv(384, 3), split_1x3_3x1(384)],
      [pool(3, 1, 'SAME'), Conv(192, 1)],
  ], name)


V3_BODY_TO_AUX = [                        # output
    v3_module_35(32, 'mixed_5b'),         # 35x35x256
    v3_module_35(64, 'mixed_5c'),         # 35x35x288
    v3_module_35(64, 'mixed_5d'),         # 35x35x288
    V3_REDUCTION_35,                      # 17x17x768
    v3_module_17(128, 'mixed_6b'),        # 17x17x768
    v3_module_17(160, 'mixed_6c'),
    v3_module_17(160, 'mixed_6d'),
    v3_module_17(192, 'mixed_6e'),        # 17x17x768, feeds the aux head
]
V3_BODY_AFTER_AUX = [
    V3_REDUCTION_17,                      # 8x8x1280
    v3_module_8(AvgPool, 'mixed_7b'),     # 8x8x2048
    v3_module_8(MaxPool, 'mixed_7c'),     # 8x8x2048
]


def v3_aux_head(b, x, num_classes):
  """Auxiliary classifier on the 17x17 grid (section 4 of the v3 paper).

  It only adds a training loss (a regulariser), so it is built only in the
  training graph. (The original tool could build it but left it off by
  default; here it is on, so a training step does its extra work.)
  """
  with tf1.variable_scope('aux_logits'):
    x = b.avg_pool(x, 5, 3)                                  # 5x5x768
    x = b.conv(x, 128, 1, batch_norm=True)                   # 5x5x128
    # Small init as in TF-slim: this conv sees a 5x5 map and outputs 1x1.
    x = b.conv(x, 768, 5, padding='VALID', batch_norm=True,
               stddev=0.01)                                  # 1x1x768
    return logits(b, b.flatten(x), num_classes, stddev=0.001)


def build_inception3(b, images, num_classes):
  x = apply_stack(b, images, V3_STEM, batch_norm=True)
  x = apply_stack(b, x, V3_BODY_TO_AUX, batch_norm=True)
  aux_logits = v3_aux_head(b, x, num_classes) if b.is_training else None
  x = apply_stack(b, x, V3_BODY_AFTER_AUX, batch_norm=True)
  # Dropout keeps 0.8 before the classifier, as in TF-slim.
  main_logits = classifier(b, x, num_classes, keep_prob=0.8)
  return registry.ModelOutput(main_logits, aux_logits=aux_logits)


# -- Inception v4 --------------------------------------------------------------

V4_STEM = [                                           # figure 3
    Conv(32, 3, 2, 'VALID'),                          # 149x149x32
    Conv(32, 3, 1, 'VALID'),                          # 147x147x32
    Conv(64, 3),                                      # 147x147x64
    Mixed([[MaxPool(3, 2)],
           [Conv(96, 3, 2, 'VALID')]], 'mixed_3a'),   # 73x73x160
    Mixed([[Conv(64, 1), Conv(96, 3, 1, 'VALID')],
           [Conv(64, 1), Conv(64, (7, 1)), Conv(64, (1, 7)),
            Conv(96, 3, 1, 'VALID')]], 'mixed_4a'),   # 71x71x192
    Mixed([[Conv(192, 3, 2, 'VALID')],
           [MaxPool(3, 2)]], 'mixed_5a'),             # 35x35x384
]

# Figure 4, 35x35x384 in and out.
V4_INCEPTION_A = [
    [AvgPool(3, 1, 'SAME'), Conv(96, 1)],
    [Conv(96, 1)],
    [Conv(64, 1), Conv(96, 3)],
    [Conv(64, 1), Conv(96, 3), Conv(96, 3)],
]

# Figure 7 with (k, l, m, n) = (192, 224, 256, 384): 35 -> 17, 1024 channels.
V4_REDUCTION_A = [
    [MaxPool(3, 2)],
    [Conv(384, 3, 2, 'VALID')],
    [Conv(192, 1), Conv(224, 3), Conv(256, 3, 2, 'VALID')],
]

# Figure 5, 17x17x1024 in and out.
V4_INCEPTION_B = [
    [AvgPool(3, 1, 'SAME'), Conv(128, 1)],
    [Conv(384, 1)],
    [Conv(192, 1), Conv(224, (1, 7)), Conv(256, (7, 1))],
    [Conv(192, 1), Conv(192, (1, 7)), Conv(224, (7, 1)),
     Conv(224, (1, 7)), Conv(256, (7, 1))],
]

# Figure 8: 17 -> 8, 1536 channels.
V4_REDUCTION_B = [
    [MaxPool(3, 2)],
    [Conv(192, 1), Conv(192, 3, 2, 'VALID')],
    [Conv(256, 1), Conv(256, (1, 7)), Conv(320, (7, 1)),
     Conv(320, 3, 2, 'VALID')],
]

# Figure 6, 8x8x1536 in and out.
V4_INCEPTION_C = [
    [AvgPool(3, 1, 'SAME'), Conv(256, 1)],
    [Conv(256, 1)],
    [Conv(384, 1), split_1x3_3x1(256)],
    [Conv(384, 1), Conv(448, (1, 3)), Conv(512, (3, 1)), split_1x3_3x1(256)],
]


def repeated(branches, count, prefix):
  return [Mixed(branches, '%s_%d' % (prefix, i)) for i in range(count)]


# Figure 9: the whole network.
V4_BODY = (repeated(V4_INCEPTION_A, 4, 'inception_a')
           + [Mixed(V4_REDUCTION_A, 'reduction_a')]
           + repeated(V4_INCEPTION_B, 7, 'inception_b')
           + [Mixed(V4_REDUCTION_B, 'reduction_b')]
           + repeated(V4_INCEPTION_C, 3, 'inception_c'))


def build_inception4(b, images, num_classes):
  # No auxiliary head: the original tool's inception4 has none.
  x = apply_stack(b, images, V4_STEM, batch_norm=True)
  x = apply_stack(b, x, V4_BODY, batch_norm=True)
  # Dropout keeps 0.8, as in figure 9 of the paper.
  return registry.ModelOutput(classifier(b, x, num_classes, keep_prob=0.8))


registry.register(registry.ModelSpec(
    'inception3', registry.IMAGENET, image_size=299, default_batch_size=32,
    default_learning_rate=0.005, build=build_inception3,
    description='Inception v3 (Szegedy et al. 2015), batch norm, aux head'))
registry.register(registry.ModelSpec(
    'inception4', registry.IMAGENET, image_size=299, default_batch_size=32,
    default_learning_rate=0.005, build=build_inception4,
    description='Inception v4 (Szegedy et al. 2016), batch norm'))
