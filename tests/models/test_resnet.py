"""ResNet zoo entries: parameter counts against published figures, shapes,
stride placement, and a few training steps."""

import dataclasses
import math

import numpy as np
import pytest
import tensorflow as tf

from tests.models import inspect_model
from models import layers
from models import registry
from models import resnet
from tests.models import zoo_checks

tf1 = tf.compat.v1

IMAGENET = registry.IMAGENET
CIFAR10 = registry.CIFAR10


built = zoo_checks.trainable_shapes
count = zoo_checks.trainable_count


# -- ImageNet: exact counts ------------------------------------------------

# torchvision resnet{50,101,152} (1000 classes; torchvision's resnet50 is
# v1.5, but v1 and v1.5 only move a stride, so the count is the same). Its
# convolutions have no bias and its batch norms have gamma and beta, like
# ours, so the only difference is our 1001-class head: + (2048 + 1).
TORCHVISION_1000 = {50: 25_557_032, 101: 44_549_160, 152: 60_192_808}
HEAD_1001_EXTRA = 2048 + 1

# Pre-activation moves batch norms, which changes 2 x (BN channels):
#   - the stem's BN (64) goes; each block's post-add BN of the last 1x1
#     (4f) and each projection's BN (4f per stage) go;
#   + each block gets a BN on its input; the network a final BN (2048).
# Per block, input width minus 4f is zero except in a stage's first block,
# where it telescopes to 64 - 2048 over the four stages, so
#   delta = -64 + (64 - 2048) - (256 + 512 + 1024 + 2048) + 2048 = -3840
# channels, -7680 parameters, whatever the depth.
V2_BN_PARAMETER_DELTA = 2 * (-64 + (64 - 2048) - (256 + 512 + 1024 + 2048)
                             + 2048)

# Cross-check of the v2 figures: keras.applications ResNet{50,101,152}V2
# model.count_params() (1000 classes) = 25,613,800 / 44,675,560 / 60,380,648.
# Keras counts the moving mean and variance too, and gives the stem, every
# projection shortcut and every block's last 1x1 convolution a bias; it puts
# a stage's stride in its last block instead of its first, which does not
# change the count.
KERAS_V2_1000 = {50: 25_613_800, 101: 44_675_560, 152: 60_380_648}


def keras_v2_biases(depth):
  widths = [4 * f for f in resnet.IMAGENET_FILTERS]
  blocks = resnet.IMAGENET_BLOCKS[depth]
  return 64 + sum(widths) + sum(w * n for w, n in zip(widths, blocks))


@pytest.mark.parametrize('name,depth', [
    ('resnet50', 50), ('resnet50_v1.5', 50), ('resnet101', 101),
    ('resnet152', 152)])
def test_imagenet_v1_count_is_torchvision_plus_head(name, depth):
  assert count(name, IMAGENET) == TORCHVISION_1000[depth] + HEAD_1001_EXTRA


def test_resnet50_count_literal():
  # The figure the brief quotes, written out once.
  assert count('resnet50', IMAGENET) == 25_559_081


@pytest.mark.parametrize('depth', [50, 101, 152])
def test_imagenet_v2_count(depth):
  expected = (TORCHVISION_1000[depth] + HEAD_1001_EXTRA
              + V2_BN_PARAMETER_DELTA)
  assert V2_BN_PARAMETER_DELTA == -7680
  assert count('resnet%d_v2' % depth, IMAGENET) == expected


@pytest.mark.parametrize('depth', [50, 101, 152])
def test_imagenet_v2_count_matches_keras(depth):
  variables, _ = built('resnet%d_v2' % depth, IMAGENET)
  bn_channels = sum(shape[0] for name, shape in variables.items()
                    if name.endswith('batchnorm/gamma'))
  ours_as_keras = (count('resnet%d_v2' % depth, IMAGENET) - HEAD_1001_EXTRA
                   + keras_v2_biases(depth) + 2 * bn_channels)
  assert ours_as_keras == KERAS_V2_1000[depth]


# -- official_resnet<depth>[_v2]: basic blocks, depth 200 --------------------

# Blocks per stage, written out again from the papers (He et al. 2016 table 1;
# depth 200 from He et al. 2016b) rather than read from models/resnet.py.
PAPER_BLOCKS = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3),
                101: (3, 4, 23, 3), 152: (3, 8, 36, 3), 200: (3, 24, 36, 3)}
# torchvision resnet18/34 (1000 classes, basic blocks, same layer kinds as
# ours): the published figures for the shallow depths.
TORCHVISION_BASIC_1000 = {18: 11_689_512, 34: 21_797_672}
OFFICIAL_DEPTHS = (18, 34, 50, 101, 152, 200)


def imagenet_resnet_parameters(depth, num_classes):
  """(v1 trainable count, channels of all projection shortcuts).

  Table 1 written out: a 7x7 stem, basic blocks below 50 layers and
  bottlenecks from 50, a 1x1 projection (with batch norm) where a block
  changes shape, bias-free convolutions each followed by batch norm
  (gamma and beta), a fully connected classifier with biases.
  """
  bottleneck = depth >= 50

  def conv_bn(kernel, cin, cout):
    return kernel * kernel * cin * cout + 2 * cout

  total = conv_bn(7, 3, 64)
  width, projections = 64, 0
  for stage, blocks in enumerate(PAPER_BLOCKS[depth]):
    filters = 64 * 2 ** stage
    out = 4 * filters if bottleneck else filters
    for block in range(blocks):
      if bottleneck:
        total += (conv_bn(1, width, filters) + conv_bn(3, filters, filters)
                  + conv_bn(1, filters, out))
      else:
        total += conv_bn(3, width, filters) + conv_bn(3, filters, filters)
      if block == 0 and (width != out or stage > 0):
        total += conv_bn(1, width, out)
        projections += out
      width = out
  return total + width * num_classes + num_classes, projections


@pytest.mark.parametrize('depth', [18, 34, 50, 101, 152])
def test_parameter_formula_reproduces_torchvision(depth):
  # The formula is what pins depth 200, for which no exact published figure
  # is at hand; here it earns that trust on the five published depths.
  published = {**TORCHVISION_1000, **TORCHVISION_BASIC_1000}[depth]
  assert imagenet_resnet_parameters(depth, 1000)[0] == published


@pytest.mark.parametrize('depth', OFFICIAL_DEPTHS)
def test_official_resnet_count(depth):
  name = 'official_resnet%d' % depth
  assert registry.get_model(name).num_classes == 1001
  expected, _ = imagenet_resnet_parameters(depth, 1001)
  assert count(name, IMAGENET) == expected


@pytest.mark.parametrize('depth', [18, 34])
def test_official_basic_resnet_count_is_torchvision_plus_head(depth):
  # Our 1001st class on 512 features: + 513.
  assert count('official_resnet%d' % depth, IMAGENET) == (
      TORCHVISION_BASIC_1000[depth] + 512 + 1)


def test_official_resnet_count_literals():
  assert count('official_resnet18', IMAGENET) == 11_690_025
  assert count('official_resnet34', IMAGENET) == 21_798_185
  assert count('official_resnet200', IMAGENET) == 64_675_881


@pytest.mark.parametrize('depth', OFFICIAL_DEPTHS)
def test_official_resnet_v2_count(depth):
  # As derived above for v2: what pre-activation removes is the batch norm
  # of every projection shortcut (2 parameters per channel), at any depth.
  v1, projections = imagenet_resnet_parameters(depth, 1001)
  assert count('official_resnet%d_v2' % depth, IMAGENET) == (
      v1 - 2 * projections)


def test_official_resnets_are_the_model_garden_versions():
  # Its version 1 strides in the 3x3 convolution (v1.5), version 2 is the
  # pre-activation network; at 50 layers and more they are our own.
  def config(name):
    return registry.get_model(name).build.args[0]
  for depth in OFFICIAL_DEPTHS:
    assert config('official_resnet%d' % depth).version == resnet.V1_5
    assert config('official_resnet%d_v2' % depth).version == resnet.V2
    assert config('official_resnet%d' % depth).bottleneck == (depth >= 50)
  assert config('official_resnet50') == config('resnet50_v1.5')
  for depth in (50, 101, 152):
    assert config('official_resnet%d_v2' % depth) == config(
        'resnet%d_v2' % depth)


def test_official_resnet_defaults_follow_the_original():
  for depth in OFFICIAL_DEPTHS:
    for suffix in ('', '_v2'):
      spec = registry.get_model('official_resnet%d%s' % (depth, suffix))
      batch = 128 if depth == 50 else 32
      assert (spec.image_size, spec.default_batch_size) == (224, batch)
      # The original's 0.0125 per 32 images.
      assert math.isclose(spec.default_learning_rate, 0.0125 * batch / 32)


# -- CIFAR-10: exact counts, and the paper's rounded figures ---------------

# He et al. 2016, table 6 (10 classes), in millions, and the rounding used.
PAPER_CIFAR_MILLIONS = {20: (0.27, 0.005), 32: (0.46, 0.005),
                        44: (0.66, 0.005), 56: (0.85, 0.005),
                        110: (1.7, 0.05)}


def cifar_resnet_parameters(depth, num_classes=10):
  """Section 4.2 written out: 3x3 convolutions, each followed by a batch
  norm (2 parameters per channel), zero-padded identity shortcuts (no
  parameters), a fully connected classifier."""
  n = (depth - 2) // 6

  def conv_bn(cin, cout):
    return 9 * cin * cout + 2 * cout

  total = conv_bn(3, 16)
  width = 16
  for filters in (16, 32, 64):
    total += conv_bn(width, filters) + conv_bn(filters, filters)
    total += (n - 1) * 2 * conv_bn(filters, filters)
    width = filters
  return total + 64 * num_classes + num_classes


@pytest.mark.parametrize('depth', resnet.CIFAR_DEPTHS)
@pytest.mark.parametrize('suffix', ['', '_v2'])
def test_cifar_count(depth, suffix):
  # v2 has the same count: it drops the stem's BN (16) and moves the first
  # block's BN of stages 2-3 onto their narrower inputs (-16, -32), and adds a
  # final BN (+64).
  name = 'resnet%d%s' % (depth, suffix)
  got = count(name, CIFAR10)
  assert got == cifar_resnet_parameters(depth)
  published, rounding = PAPER_CIFAR_MILLIONS[depth]
  assert abs(got / 1e6 - published) <= rounding + 1e-9, (name, got)


def test_cifar_resnet20_count_literal():
  assert count('resnet20', CIFAR10) == 269_722


def test_cifar_shortcuts_have_no_parameters():
  variables, _ = built('resnet20', CIFAR10)
  assert not [n for n in variables if 'shortcut' in n]


# -- structure -------------------------------------------------------------

ALL_NAMES = ([(n, IMAGENET) for n in (
    'resnet50', 'resnet50_v1.5', 'resnet50_v2', 'resnet101', 'resnet101_v2',
    'resnet152', 'resnet152_v2')] +
             [('official_resnet%d%s' % (d, s), IMAGENET)
              for d in OFFICIAL_DEPTHS for s in ('', '_v2')] +
             [('resnet%d%s' % (d, s), CIFAR10)
              for d in resnet.CIFAR_DEPTHS for s in ('', '_v2')])


def test_registered_names_and_defaults():
  for name, dataset in ALL_NAMES:
    if name.startswith('official_'):
      continue  # their defaults: test_official_resnet_defaults_...
    spec = registry.get_model(name, dataset)
    if dataset == IMAGENET:
      assert spec.image_size == 224
      assert spec.default_batch_size == (64 if name.startswith('resnet50')
                                         else 32)
      assert math.isclose(spec.default_learning_rate,
                          0.1 * spec.default_batch_size / 256)
    else:
      assert (spec.image_size, spec.default_batch_size) == (32, 128)
    assert spec.num_classes == registry.NUM_CLASSES[dataset]


@pytest.mark.parametrize('name,dataset', ALL_NAMES)
def test_logits_shape_nhwc(name, dataset):
  _, shape = built(name, dataset)
  assert shape == [2, registry.NUM_CLASSES[dataset]]


# One model per code path (v1/v1.5/v2 bottleneck, v1/v2 basic block with
# projection or zero-padded shortcuts).
@pytest.mark.parametrize('name,dataset', [
    ('resnet50', IMAGENET), ('resnet50_v1.5', IMAGENET),
    ('resnet50_v2', IMAGENET), ('official_resnet18', IMAGENET),
    ('official_resnet18_v2', IMAGENET), ('resnet20', CIFAR10),
    ('resnet20_v2', CIFAR10)])
def test_logits_shape_and_count_nchw(name, dataset):
  _, shape = built(name, dataset, 'NCHW')
  assert shape == [2, registry.NUM_CLASSES[dataset]]
  assert count(name, dataset, 'NCHW') == count(name, dataset)


@pytest.mark.parametrize('name,dataset', ALL_NAMES)
def test_batch_norm_variables_are_named_for_weight_decay(name, dataset):
  variables, _ = built(name, dataset)
  for var_name in variables:
    leaf = var_name.rsplit('/', 1)[1]
    is_bn = layers.BATCHNORM_SCOPE in var_name.split('/')
    assert is_bn == (leaf in ('gamma', 'beta')), var_name
    # Nothing is followed by batch norm and also has a bias.
    assert leaf != 'bias' or var_name == 'v0/logits/bias', var_name


def conv_strides(config, data_format='NHWC'):
  """{conv scope: stride} for a small network built from ``config``."""
  graph = tf.Graph()
  with graph.as_default():
    images = tf1.placeholder(tf.float32, [1, 32, 32, 3])
    b = layers.Builder(data_format=data_format)
    resnet.build_resnet(config, b, b.to_layout(images), 10)
  return {op.name.rsplit('/', 1)[0]: op.get_attr('strides')[1]
          for op in graph.get_operations() if op.type == 'Conv2D'}


@pytest.mark.parametrize('version,strided_conv', [
    (resnet.V1, 'conv0'), (resnet.V1_5, 'conv1'), (resnet.V2, 'conv1')])
def test_downsampling_bottleneck_stride_placement(version, strided_conv):
  config = dataclasses.replace(
      resnet.imagenet_config(50, version),
      stages=(resnet.Stage(1, 4, 1), resnet.Stage(1, 8, 2)))
  strides = conv_strides(config)
  block = 'stage1_block0/'
  assert strides[block + strided_conv] == 2
  assert strides[block + 'shortcut'] == 2
  others = [k for k in strides
            if k.startswith(block + 'conv') and k != block + strided_conv]
  assert others and all(strides[k] == 1 for k in others)


def test_cifar_depth_must_be_6n_plus_2():
  with pytest.raises(ValueError):
    resnet.cifar_config(21, resnet.V1)


# -- training --------------------------------------------------------------


def nchw_convolution_runs_on_cpu():
  """TF's own CPU kernels are NHWC-only; the oneDNN ones (on by default on
  x86 Linux) also take NCHW."""
  graph = tf.Graph()
  with graph.as_default():
    x = tf.ones([1, 3, 4, 4])
    y = tf.nn.max_pool2d(
        tf.nn.conv2d(x, tf.ones([3, 3, 3, 2]), [1, 1, 1, 1], 'SAME',
                     data_format='NCHW'), [1, 1, 2, 2], [1, 1, 2, 2], 'VALID',
        data_format='NCHW')
  try:
    with tf1.Session(graph=graph) as sess:
      sess.run(y)
    return True
  except tf.errors.OpError:
    return False


@pytest.mark.parametrize('name,dataset', [
    ('resnet50_v1.5', IMAGENET), ('resnet56_v2', CIFAR10),
    ('resnet20', CIFAR10), ('official_resnet18', IMAGENET)])
def test_trains(name, dataset):
  losses = inspect_model.train_steps(registry.get_model(name, dataset),
                                     steps=2, batch_size=2)
  assert len(losses) == 2 and all(np.isfinite(losses))


def test_trains_nchw():
  if not nchw_convolution_runs_on_cpu():
    pytest.skip('this TensorFlow build has no NCHW convolution on CPU')
  losses = inspect_model.train_steps(registry.get_model('resnet20_v2', CIFAR10),
                                     steps=2, batch_size=2,
                                     data_format='NCHW')
  assert all(np.isfinite(losses))
