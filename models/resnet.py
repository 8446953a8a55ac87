"""Residual networks: v1, v1.5 and v2 (pre-activation), ImageNet and CIFAR-10.

Sources:
* He, Zhang, Ren, Sun, "Deep Residual Learning for Image Recognition" (2016):
  table 1 for the ImageNet bottleneck networks, section 4.2 for the CIFAR-10
  networks (6n + 2 layers: a 3x3 stem and three stages of n basic blocks with
  16/32/64 filters; identity shortcuts, zero-padded where the width doubles,
  their "option A").
* He, Zhang, Ren, Sun, "Identity Mappings in Deep Residual Networks" (2016):
  the pre-activation unit (BN-ReLU before each convolution, nothing after the
  addition) used by the v2 networks.
* "v1.5" is the variant popularised by the Torch and later reference
  implementations: a downsampling bottleneck strides in its 3x3 convolution
  instead of its first 1x1 (which would otherwise skip three quarters of the
  input pixels). It has exactly the parameters of v1.
* ResNet-18/34 (table 1 again) use two-convolution "basic" blocks on the
  ImageNet stem; ResNet-200 is the deeper bottleneck network of the
  pre-activation paper. The original tool offered these depths only as
  ``official_resnet*``: its wrapper of the TensorFlow Model Garden's ResNet
  (official/r1/resnet), whose version 1 strides in the 3x3 convolution (v1.5
  here) and whose version 2 is the pre-activation network.

A network is a stem, a list of stages and a classifier. What differs between
the variants is captured by two block properties (where the stride goes and
whether the unit is pre-activated) and by the shortcut kind, so each piece of
logic exists once.
"""

import dataclasses
import functools
from typing import Tuple

import tensorflow as tf

from models import registry

tf1 = tf.compat.v1

V1 = 'v1'      # post-activation, stride in the first 1x1 of a bottleneck
V1_5 = 'v1.5'  # post-activation, stride in the 3x3 of a bottleneck
V2 = 'v2'      # pre-activation, stride in the 3x3

# Shortcuts of blocks that change shape.
PROJECTION = 'projection'  # 1x1 convolution (ImageNet, the paper's option B)
ZERO_PAD = 'zero_pad'      # subsample + zero channels (CIFAR, option A)


@dataclasses.dataclass(frozen=True)
class Stage:
  blocks: int
  filters: int  # 3x3 width; a bottleneck's output is 4x this
  stride: int   # of the stage's first block


@dataclasses.dataclass(frozen=True)
class ResNetConfig:
  stem: str  # 'imagenet' or 'cifar'
  stages: Tuple[Stage, ...]
  bottleneck: bool
  version: str
  shortcut: str

  @property
  def pre_activation(self):
    return self.version == V2


# Table 1 of He et al. 2016: blocks per stage; widths 64..512. Depth 200
# (He et al. 2016b) has the same stage widths with more blocks.
IMAGENET_BLOCKS = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3),
                   101: (3, 4, 23, 3), 152: (3, 8, 36, 3),
                   200: (3, 24, 36, 3)}
# Below 50 layers the blocks are basic (two 3x3 convolutions), from 50 on
# bottlenecks: table 1, and the same rule in the Model Garden's ResNet.
FIRST_BOTTLENECK_DEPTH = 50
IMAGENET_FILTERS = (64, 128, 256, 512)
IMAGENET_STRIDES = (1, 2, 2, 2)  # the stem's max pool already halved stage 1
BOTTLENECK_EXPANSION = 4

# Section 4.2: depth 6n + 2, three stages of n basic blocks.
CIFAR_DEPTHS = (20, 32, 44, 56, 110)
CIFAR_FILTERS = (16, 32, 64)
CIFAR_STRIDES = (1, 2, 2)


def imagenet_config(depth, version):
  stages = tuple(Stage(n, f, s) for n, f, s in zip(
      IMAGENET_BLOCKS[depth], IMAGENET_FILTERS, IMAGENET_STRIDES))
  return ResNetConfig('imagenet', stages,
                      bottleneck=depth >= FIRST_BOTTLENECK_DEPTH,
                      version=version, shortcut=PROJECTION)


def cifar_config(depth, version):
  blocks_per_stage, remainder = divmod(depth - 2, 6)
  if remainder:
    raise ValueError('CIFAR ResNet depth must be 6n + 2, got %d' % depth)
  stages = tuple(Stage(blocks_per_stage, f, s)
                 for f, s in zip(CIFAR_FILTERS, CIFAR_STRIDES))
  return ResNetConfig('cifar', stages, bottleneck=False, version=version,
                      shortcut=ZERO_PAD)


# -- building blocks -------------------------------------------------------


def padding_for(kernel, stride):
  """Strided convolutions pad explicitly (kernel - 1 pixels, split evenly).

  SAME padding of a stride-2 convolution on an even input pads only on the
  bottom/right; the reference ResNets pad both sides independently of the
  input size ("fixed padding"). With stride 1 the two are the same.
  """
  return kernel - 1 if stride > 1 else 'SAME'


def batch_norm_relu(b, x):
  return b.activation(b.batch_norm(x), 'relu')


def branch_convs(config, filters, stride):
  """(filters, kernel, stride) of each convolution of the residual path."""
  if not config.bottleneck:
    return [(filters, 3, stride), (filters, 3, 1)]
  out = BOTTLENECK_EXPANSION * filters
  if config.version == V1:
    return [(filters, 1, stride), (filters, 3, 1), (out, 1, 1)]
  return [(filters, 1, 1), (filters, 3, stride), (out, 1, 1)]


def residual_branch(b, x, config, convs):
  """The convolutions of a block, each but the last followed by BN-ReLU.

  The last one is followed by batch norm in v1 (the ReLU comes after the
  addition) and by nothing in v2 (the next unit pre-activates the sum).
  """
  for i, (filters, kernel, stride) in enumerate(convs):
    last = i == len(convs) - 1
    x = b.conv(x, filters, kernel, stride, padding=padding_for(kernel, stride),
               activation=None if last else 'relu',
               batch_norm=not (last and config.pre_activation),
               use_bias=False, name='conv%d' % i)
  return x


def shortcut(b, x, config, out_channels, stride):
  """Identity, or what makes x match the residual branch's shape."""
  if b.channels(x) == out_channels and stride == 1:
    return x
  if config.shortcut == PROJECTION:
    # Pre-activated units project the already normalised input, so no batch
    # norm of their own.
    return b.conv(x, out_channels, 1, stride, activation=None,
                  batch_norm=not config.pre_activation, use_bias=False,
                  name='shortcut')
  # Option A: parameter-free. A 1x1 max pool with stride 2 keeps every other
  # pixel; the new channels are zeros. Every CIFAR stage doubles the width.
  if out_channels != 2 * b.channels(x):
    raise ValueError('zero-padded shortcut expects the width to double')
  x = b.max_pool(x, 1, stride)
  return b.concat([x, tf.zeros_like(x)])


def residual_block(b, x, config, filters, stride):
  convs = branch_convs(config, filters, stride)
  out_channels = convs[-1][0]
  reshapes = b.channels(x) != out_channels or stride != 1
  if config.pre_activation:
    with tf1.variable_scope('preact'):
      preact = batch_norm_relu(b, x)
    # He et al. 2016b: where the unit changes shape both paths start from the
    # shared pre-activation; an identity shortcut carries the raw sum.
    skip = shortcut(b, preact if reshapes else x, config, out_channels,
                    stride)
    return skip + residual_branch(b, preact, config, convs)
  skip = shortcut(b, x, config, out_channels, stride)
  return tf.nn.relu(skip + residual_branch(b, x, config, convs))


# -- whole network ---------------------------------------------------------


def stem(b, x, config):
  """The layers before the first stage.

  Pre-activated networks leave the stem convolution un-normalised: the first
  unit's pre-activation does that.
  """
  post_bn = not config.pre_activation
  activation = 'relu' if post_bn else None
  if config.stem == 'imagenet':
    x = b.conv(x, 64, 7, 2, padding=padding_for(7, 2), activation=activation,
               batch_norm=post_bn, use_bias=False, name='stem')
    return b.max_pool(x, 3, 2, padding='SAME')
  return b.conv(x, CIFAR_FILTERS[0], 3, 1, activation=activation,
                batch_norm=post_bn, use_bias=False, name='stem')


def build_resnet(config, b, images, num_classes):
  x = stem(b, images, config)
  for stage_index, stage in enumerate(config.stages):
    for block_index in range(stage.blocks):
      stride = stage.stride if block_index == 0 else 1
      with tf1.variable_scope('stage%d_block%d' % (stage_index, block_index)):
        x = residual_block(b, x, config, stage.filters, stride)
  if config.pre_activation:
    # Nothing normalised the last unit's sum yet.
    with tf1.variable_scope('final'):
      x = batch_norm_relu(b, x)
  x = b.global_avg_pool(x)
  logits = b.dense(x, num_classes, activation='linear', name='logits')
  return registry.ModelOutput(logits)


# -- registry --------------------------------------------------------------

# Learning rates follow the linear scaling rule of Goyal et al. 2017
# ("Accurate, Large Minibatch SGD"): 0.1 per 256 images, the rate He et al.
# used for ImageNet at batch 256, scaled to the default per-device batch.
# (The original tool used a much smaller benchmark-only rate; a rate a real
# run can converge with is the more useful default.) The CIFAR networks keep
# He et al.'s 0.1 at their own batch of 128.
def imagenet_learning_rate(batch_size):
  return 0.1 * batch_size / 256


# Registered names: the bare name is v1; only resnet50 has a v1.5 form.
IMAGENET_VARIANTS = {50: (('', V1), ('_v1.5', V1_5), ('_v2', V2)),
                     101: (('', V1), ('_v2', V2)),
                     152: (('', V1), ('_v2', V2))}
CIFAR_VARIANTS = (('', V1), ('_v2', V2))

# The original's official_resnet<depth>[_v2] (its official_resnet_model.py):
# the Model Garden's version 1 is v1.5 here (stride in the 3x3 convolution;
# basic blocks have only 3x3 ones, so at 18 and 34 layers v1 and v1.5 are the
# same network), its version 2 is v2. Its head has 1001 classes like ours.
OFFICIAL_DEPTHS = (18, 34, 50, 101, 152, 200)
OFFICIAL_VARIANTS = (('', V1_5), ('_v2', V2))


def _register_imagenet(name, depth, version, batch_size, description):
  registry.register(registry.ModelSpec(
      name, registry.IMAGENET, image_size=224, default_batch_size=batch_size,
      default_learning_rate=imagenet_learning_rate(batch_size),
      build=functools.partial(build_resnet, imagenet_config(depth, version)),
      description=description))


def _register_models():
  for depth, variants in IMAGENET_VARIANTS.items():
    for suffix, version in variants:
      _register_imagenet(
          'resnet%d%s' % (depth, suffix), depth, version,
          batch_size=64 if depth == 50 else 32,
          description='ResNet-%d %s (He et al. 2016), bottleneck blocks' % (
              depth, version))
  for depth in OFFICIAL_DEPTHS:
    for suffix, version in OFFICIAL_VARIANTS:
      # The original's default batches: 128 at depth 50, else 32. Its rate,
      # 0.0125 per 32 images, is the linear scaling rule's 0.1 per 256.
      _register_imagenet(
          'official_resnet%d%s' % (depth, suffix), depth, version,
          batch_size=128 if depth == 50 else 32,
          description='ResNet-%d %s, %s blocks (as the original\'s '
          'official_resnet, the Model Garden ResNet)' % (
              depth, version,
              'bottleneck' if depth >= FIRST_BOTTLENECK_DEPTH else 'basic'))
  for depth in CIFAR_DEPTHS:
    for suffix, version in CIFAR_VARIANTS:
      registry.register(registry.ModelSpec(
          'resnet%d%s' % (depth, suffix), registry.CIFAR10, image_size=32,
          default_batch_size=128, default_learning_rate=0.1,
          build=functools.partial(build_resnet, cifar_config(depth, version)),
          description='CIFAR ResNet-%d %s (He et al. 2016 sec. 4.2)' % (
              depth, version)))


_register_models()
