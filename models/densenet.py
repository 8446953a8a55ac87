"""Densely connected networks (Huang, Liu, van der Maaten, Weinberger 2017).

Every layer of a dense block sees the concatenation of all earlier outputs of
the block and adds ``growth_rate`` new channels; transition layers between
blocks (BN-ReLU, 1x1 convolution, 2x2 average pool) halve the resolution.

* ImageNet networks are DenseNet-BC (table 1): each 3x3 convolution is preceded
  by a 1x1 "bottleneck" producing 4k channels, transitions compress the width
  by 0.5, k = 32, and the stem is a 7x7/2 convolution with 2k filters plus a
  3x3/2 max pool.
* CIFAR networks are the plain DenseNet of table 2 (L = 40 or 100): a 3x3
  stem with 16 filters, three dense blocks of (L - 4) / 3 layers, each layer a
  single BN-ReLU-3x3 convolution, transitions that keep the width. The paper
  adds dropout only when training without data augmentation; the benchmark
  trains with augmentation, so there is none.

All convolutions are pre-activated (BN-ReLU before), so none has a bias.
"""

import dataclasses
import functools
import math
from typing import Tuple

import tensorflow as tf

from models import registry

tf1 = tf.compat.v1

BOTTLENECK_WIDTH = 4  # a BC layer's 1x1 convolution outputs 4 x growth_rate


@dataclasses.dataclass(frozen=True)
class DenseNetConfig:
  stem: str  # 'imagenet' or 'cifar'
  stem_filters: int
  block_layers: Tuple[int, ...]  # layers per dense block
  growth_rate: int
  bottleneck: bool    # 1x1 convolution before each 3x3 (the "B" of BC)
  compression: float  # transition width = floor(compression x input width)


# Table 1: DenseNet-BC, k = 32, layers per block.
IMAGENET_BLOCK_LAYERS = {121: (6, 12, 24, 16), 169: (6, 12, 32, 32),
                         201: (6, 12, 48, 32)}
IMAGENET_GROWTH_RATE = 32


def imagenet_config(depth):
  return DenseNetConfig('imagenet', 2 * IMAGENET_GROWTH_RATE,
                        IMAGENET_BLOCK_LAYERS[depth], IMAGENET_GROWTH_RATE,
                        bottleneck=True, compression=0.5)


def cifar_config(depth, growth_rate):
  """Plain DenseNet of depth L = 3n + 4 (stem, 3 x n layers, 2 transitions,
  classifier)."""
  layers, remainder = divmod(depth - 4, 3)
  if remainder:
    raise ValueError('plain CIFAR DenseNet depth must be 3n + 4, got %d' %
                     depth)
  return DenseNetConfig('cifar', 16, (layers,) * 3, growth_rate,
                        bottleneck=False, compression=1.0)


# -- building blocks -------------------------------------------------------


def batch_norm_relu(b, x):
  return b.activation(b.batch_norm(x), 'relu')


def dense_layer(b, x, config):
  """BN-ReLU-[1x1 conv-BN-ReLU]-3x3 conv; returns the k new channels."""
  with tf1.variable_scope('preact'):
    y = batch_norm_relu(b, x)
  if config.bottleneck:
    # Batch norm and ReLU of the 3x3's input are the 1x1's post-processing.
    y = b.conv(y, BOTTLENECK_WIDTH * config.growth_rate, 1, activation='relu',
               batch_norm=True, use_bias=False, name='bottleneck')
  return b.conv(y, config.growth_rate, 3, activation=None, use_bias=False,
                name='conv')


def dense_block(b, x, config, num_layers):
  for i in range(num_layers):
    with tf1.variable_scope('layer%d' % i):
      x = b.concat([x, dense_layer(b, x, config)])
  return x


def transition(b, x, config):
  with tf1.variable_scope('preact'):
    x = batch_norm_relu(b, x)
  filters = int(math.floor(config.compression * b.channels(x)))
  x = b.conv(x, filters, 1, activation=None, use_bias=False, name='conv')
  return b.avg_pool(x, 2, 2)


def stem(b, x, config):
  """The layers before the first dense block.

  The ImageNet stem is conv-BN-ReLU-max pool (table 1), so the pool sees
  activated features; the plain CIFAR stem is a lone convolution whose output
  the first layer's pre-activation normalises.
  """
  if config.stem == 'imagenet':
    # Explicit 3 + 3 padding, as the ResNets do, so the padding does not
    # depend on the input size.
    x = b.conv(x, config.stem_filters, 7, 2, padding=6, activation='relu',
               batch_norm=True, use_bias=False, name='stem')
    return b.max_pool(x, 3, 2, padding='SAME')
  return b.conv(x, config.stem_filters, 3, activation=None, use_bias=False,
                name='stem')


def build_densenet(config, b, images, num_classes):
  x = stem(b, images, config)
  for i, num_layers in enumerate(config.block_layers):
    if i > 0:
      with tf1.variable_scope('transition%d' % i):
        x = transition(b, x, config)
    with tf1.variable_scope('block%d' % i):
      x = dense_block(b, x, config, num_layers)
  with tf1.variable_scope('final'):
    x = batch_norm_relu(b, x)
  x = b.global_avg_pool(x)
  logits = b.dense(x, num_classes, activation='linear', name='logits')
  return registry.ModelOutput(logits)


# -- registry --------------------------------------------------------------

# Learning rates: Huang et al. train with SGD at 0.1, batch 256 on ImageNet
# (scaled linearly to the default batch of 32, as for the ResNets) and
# batch 64 on CIFAR (the default batch here, so 0.1 as published).
IMAGENET_BATCH_SIZE = 32
CIFAR_BATCH_SIZE = 64
CIFAR_MODELS = ((40, 12), (100, 12), (100, 24))  # (L, k) of table 2


def _register_models():
  for depth in IMAGENET_BLOCK_LAYERS:
    registry.register(registry.ModelSpec(
        'densenet%d' % depth, registry.IMAGENET, image_size=224,
        default_batch_size=IMAGENET_BATCH_SIZE,
        default_learning_rate=0.1 * IMAGENET_BATCH_SIZE / 256,
        build=functools.partial(build_densenet, imagenet_config(depth)),
        description='DenseNet-BC-%d, k=32 (Huang et al. 2017 table 1)' %
        depth))
  for depth, growth_rate in CIFAR_MODELS:
    registry.register(registry.ModelSpec(
        'densenet%d_k%d' % (depth, growth_rate), registry.CIFAR10,
        image_size=32, default_batch_size=CIFAR_BATCH_SIZE,
        default_learning_rate=0.1,
        build=functools.partial(build_densenet,
                                cifar_config(depth, growth_rate)),
        description='DenseNet L=%d, k=%d (Huang et al. 2017 table 2)' % (
            depth, growth_rate)))


_register_models()
