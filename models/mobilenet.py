"""MobileNet v1 (Howard et al. 2017) and v2 (Sandler et al. 2018), width 1.0.

Both are read off the papers' architecture tables: each table row is one entry
of a tuple below, and a small block function turns a row into layers. ReLU6 is
used throughout, as in the TF-slim and keras.applications versions whose
published parameter counts the tests compare against.

Names: the original tool registered one MobileNet, ``mobilenet``, and it was
v2 (its models/tf1_only/mobilenet_v2.py), so ``mobilenet`` is v2 here too: a
command line pasted from the original runs the same network. v1 has a name of
its own, ``mobilenet_v1``; ``mobilenet_v2`` is an alias of ``mobilenet`` that
the original did not have (kept because this project registered it before).
"""

import tensorflow as tf

from models import registry

tf1 = tf.compat.v1

# Howard et al. 2017, table 1, after the first full convolution
# (3x3, 32 filters, stride 2): one (depthwise stride, pointwise filters) pair
# per depthwise-separable layer. The table prints the last depthwise layer as
# "s2", but its input and output are both 7x7: the stride is 1 (as in every
# released implementation).
MOBILENET_V1_STEM_FILTERS = 32
MOBILENET_V1_LAYERS = (
    (1, 64),
    (2, 128), (1, 128),
    (2, 256), (1, 256),
    (2, 512), (1, 512), (1, 512), (1, 512), (1, 512), (1, 512),
    (2, 1024), (1, 1024),
)

# Sandler et al. 2018, table 2: after the first convolution (3x3, 32 filters,
# stride 2), rows of bottleneck blocks as (expansion t, output channels c,
# repeats n, stride s of the first repeat), then a 1x1 convolution to 1280.
MOBILENET_V2_STEM_FILTERS = 32
MOBILENET_V2_BOTTLENECKS = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)
MOBILENET_V2_LAST_FILTERS = 1280


def _depthwise_separable(b, x, stride, filters):
  """MobileNet v1 layer: 3x3 depthwise then 1x1 pointwise, each BN + ReLU6."""
  x = b.depthwise_conv(x, 3, stride=stride, activation='relu6',
                       name='depthwise')
  return b.conv(x, filters, 1, activation='relu6', batch_norm=True,
                name='pointwise')


def _inverted_residual(b, x, expansion, filters, stride):
  """MobileNet v2 bottleneck: expand, depthwise, linear projection.

  The projection has no activation ("linear bottleneck": ReLU on the narrow
  representation would destroy information). The shortcut joins the narrow
  ends, only where input and output shapes agree. With expansion 1 there is
  nothing to expand, so that 1x1 convolution is left out (as in the reference
  implementations, which the parameter count depends on).
  """
  in_channels = b.channels(x)
  y = x
  if expansion != 1:
    y = b.conv(y, in_channels * expansion, 1, activation='relu6',
               batch_norm=True, name='expand')
  y = b.depthwise_conv(y, 3, stride=stride, activation='relu6',
                       name='depthwise')
  y = b.conv(y, filters, 1, activation=None, batch_norm=True, name='project')
  if stride == 1 and in_channels == filters:
    y = x + y
  return y


def _classifier(b, x, num_classes):
  """Global average pooling then the fully connected classifier.

  The 1x1-convolution classifier of the papers is a dense layer on the
  pooled features. No dropout: the reference versions keep 99.9%.
  """
  x = b.global_avg_pool(x)
  return b.dense(x, num_classes, activation='linear', name='logits')


def build_mobilenet_v1(b, images, num_classes):
  x = b.conv(images, MOBILENET_V1_STEM_FILTERS, 3, stride=2,
             activation='relu6', batch_norm=True, name='conv0')
  for i, (stride, filters) in enumerate(MOBILENET_V1_LAYERS):
    with tf1.variable_scope('separable%d' % i):
      x = _depthwise_separable(b, x, stride, filters)
  return registry.ModelOutput(_classifier(b, x, num_classes))


def build_mobilenet_v2(b, images, num_classes):
  x = b.conv(images, MOBILENET_V2_STEM_FILTERS, 3, stride=2,
             activation='relu6', batch_norm=True, name='conv0')
  block = 0
  for expansion, filters, repeats, first_stride in MOBILENET_V2_BOTTLENECKS:
    for repeat in range(repeats):
      stride = first_stride if repeat == 0 else 1
      with tf1.variable_scope('bottleneck%d' % block):
        x = _inverted_residual(b, x, expansion, filters, stride)
      block += 1
  x = b.conv(x, MOBILENET_V2_LAST_FILTERS, 1, activation='relu6',
             batch_norm=True, name='conv_last')
  return registry.ModelOutput(_classifier(b, x, num_classes))


# The original tool's mobilenet defaults: 224 pixels, batch 32, learning rate
# 0.005 (models/tf1_only/mobilenet_v2.py); v1 gets the same.
def _register(name, build, description):
  registry.register(registry.ModelSpec(
      name, registry.IMAGENET, image_size=224, default_batch_size=32,
      default_learning_rate=0.005, build=build, description=description))


_V2_DESCRIPTION = ('MobileNet v2 1.0/224, inverted residuals (Sandler et al. '
                   '2018, table 2)')
_register('mobilenet', build_mobilenet_v2, _V2_DESCRIPTION)
# Not a name of the original's: an alias, so earlier command lines keep working.
_register('mobilenet_v2', build_mobilenet_v2,
          _V2_DESCRIPTION + '; alias of mobilenet')
_register('mobilenet_v1', build_mobilenet_v1,
          'MobileNet v1 1.0/224, ReLU6 (Howard et al. 2017, table 1)')
