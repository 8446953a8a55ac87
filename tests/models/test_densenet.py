"""DenseNet zoo entries: parameter counts against published figures, shapes,
and a few training steps."""


import numpy as np
import pytest
import tensorflow as tf

from models import densenet
from tests.models import inspect_model
from models import layers
from models import registry
from tests.models import zoo_checks

tf1 = tf.compat.v1

IMAGENET = registry.IMAGENET
CIFAR10 = registry.CIFAR10


built = zoo_checks.trainable_shapes
count = zoo_checks.trainable_count


# -- ImageNet (DenseNet-BC): exact counts ----------------------------------

# torchvision densenet{121,169,201}, 1000 classes. Its convolutions have no
# bias and its batch norms have gamma and beta, like ours; our 1001-class head
# adds (features + 1), features being the final width: 64 + 32 x 16 after
# compressing to 512 = 1024 (121), 640 + 32 x 32 = 1664 (169),
# 896 + 32 x 32 = 1920 (201).
TORCHVISION_1000 = {121: 7_978_856, 169: 14_149_480, 201: 20_013_928}
FEATURES = {121: 1024, 169: 1664, 201: 1920}


def final_width(depth):
  """Width after the last dense block, from table 1's layer counts."""
  width = 64
  for i, num_layers in enumerate(densenet.IMAGENET_BLOCK_LAYERS[depth]):
    if i > 0:
      width //= 2  # compression 0.5
    width += 32 * num_layers
  return width


@pytest.mark.parametrize('depth', [121, 169, 201])
def test_imagenet_count_is_torchvision_plus_head(depth):
  assert final_width(depth) == FEATURES[depth]
  expected = TORCHVISION_1000[depth] + FEATURES[depth] + 1
  assert count('densenet%d' % depth, IMAGENET) == expected


def test_densenet121_matches_keras():
  # keras.applications DenseNet121 (1000 classes) has 8,062,504 parameters
  # including the non-trainable moving mean and variance (no conv biases).
  variables, _ = built('densenet121', IMAGENET)
  bn_channels = sum(shape[0] for name, shape in variables.items()
                    if name.endswith('batchnorm/gamma'))
  ours_as_keras = count('densenet121', IMAGENET) - 1025 + 2 * bn_channels
  assert ours_as_keras == 8_062_504


# -- CIFAR-10 (plain DenseNet): exact counts and the paper's figures -------

# Huang et al. 2017, table 2, 10 classes, millions (rounded to 0.1 M).
PAPER_CIFAR_MILLIONS = {'densenet40_k12': 1.0, 'densenet100_k12': 7.0,
                        'densenet100_k24': 27.2}
CIFAR_SHAPES = {'densenet40_k12': (40, 12), 'densenet100_k12': (100, 12),
                'densenet100_k24': (100, 24)}


def plain_densenet_parameters(depth, growth_rate, num_classes=10):
  """Section 3 written out: a 16-filter 3x3 stem; three blocks of
  (L - 4) / 3 layers, each BN (2 per input channel) + 3x3 convolution to k
  channels; transitions BN + 1x1 convolution keeping the width; a final BN
  and the classifier."""
  layers_per_block = (depth - 4) // 3
  total = 9 * 3 * 16
  width = 16
  for block in range(3):
    if block > 0:
      total += 2 * width + width * width
    for _ in range(layers_per_block):
      total += 2 * width + 9 * width * growth_rate
      width += growth_rate
  return total + 2 * width + width * num_classes + num_classes


@pytest.mark.parametrize('name', sorted(PAPER_CIFAR_MILLIONS))
def test_cifar_count(name):
  got = count(name, CIFAR10)
  assert got == plain_densenet_parameters(*CIFAR_SHAPES[name])
  assert abs(got / 1e6 - PAPER_CIFAR_MILLIONS[name]) <= 0.05, (name, got)


def test_cifar_count_literals():
  assert count('densenet40_k12', CIFAR10) == 1_019_722
  assert count('densenet100_k24', CIFAR10) == 27_249_082


def test_cifar_depth_must_be_3n_plus_4():
  with pytest.raises(ValueError):
    densenet.cifar_config(41, 12)


# -- structure -------------------------------------------------------------

ALL_NAMES = ([('densenet%d' % d, IMAGENET) for d in (121, 169, 201)] +
             [(n, CIFAR10) for n in sorted(PAPER_CIFAR_MILLIONS)])


def test_registered_defaults():
  for name, dataset in ALL_NAMES:
    spec = registry.get_model(name, dataset)
    if dataset == IMAGENET:
      assert (spec.image_size, spec.default_batch_size) == (224, 32)
    else:
      assert (spec.image_size, spec.default_batch_size) == (32, 64)


@pytest.mark.parametrize('name,dataset', ALL_NAMES)
def test_logits_shape_nhwc(name, dataset):
  _, shape = built(name, dataset)
  assert shape == [2, registry.NUM_CLASSES[dataset]]


@pytest.mark.parametrize('name,dataset', [('densenet121', IMAGENET),
                                          ('densenet40_k12', CIFAR10)])
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
    assert leaf != 'bias' or var_name == 'v0/logits/bias', var_name


# -- training --------------------------------------------------------------


def nchw_convolution_runs_on_cpu():
  """TF's own CPU kernels are NHWC-only; the oneDNN ones (on by default on
  x86 Linux) also take NCHW."""
  graph = tf.Graph()
  with graph.as_default():
    x = tf.ones([1, 3, 4, 4])
    y = tf.nn.avg_pool2d(
        tf.nn.conv2d(x, tf.ones([3, 3, 3, 2]), [1, 1, 1, 1], 'SAME',
                     data_format='NCHW'), [1, 1, 2, 2], [1, 1, 2, 2], 'VALID',
        data_format='NCHW')
  try:
    with tf1.Session(graph=graph) as sess:
      sess.run(y)
    return True
  except tf.errors.OpError:
    return False


@pytest.mark.parametrize('name,dataset', [('densenet40_k12', CIFAR10),
                                          ('densenet121', IMAGENET)])
def test_trains(name, dataset):
  losses = inspect_model.train_steps(registry.get_model(name, dataset),
                                     steps=2, batch_size=2)
  assert len(losses) == 2 and all(np.isfinite(losses))


def test_trains_nchw():
  if not nchw_convolution_runs_on_cpu():
    pytest.skip('this TensorFlow build has no NCHW convolution on CPU')
  losses = inspect_model.train_steps(
      registry.get_model('densenet40_k12', CIFAR10), steps=2, batch_size=2,
      data_format='NCHW')
  assert all(np.isfinite(losses))
