"""MobileNet v1 and v2: published parameter counts, output shapes, training."""

import math

import pytest
import tensorflow as tf

from tests.models import inspect_model
from models import mobilenet
from models import registry
from tests.models import zoo_checks

tf1 = tf.compat.v1

# keras.applications MobileNet (alpha 1.0) and MobileNetV2 (alpha 1.0), 224
# px, 1000 classes, as printed by model.summary() (keras.io applications
# table gives the totals; the split was reproduced with keras 3.15,
# keras.applications.MobileNet(weights=None)). The non-trainable part is the
# batch-norm moving mean and variance, which we also create but do not count
# as trainable.
# ``mobilenet`` is v2, as in the original tool; ``mobilenet_v2`` is its alias.
KERAS_TOTAL = {'mobilenet_v1': 4_253_864, 'mobilenet': 3_538_984}
KERAS_TRAINABLE = {'mobilenet_v1': 4_231_976, 'mobilenet': 3_504_872}
KERAS_CLASSES = 1000

# Channels entering the classifier (v1: last pointwise conv; v2: conv 1280).
FEATURES = {'mobilenet_v1': 1024, 'mobilenet': 1280}

MODELS = ('mobilenet_v1', 'mobilenet')


def _head_difference(name, num_classes):
  return zoo_checks.head_difference(num_classes, FEATURES[name],
                                    KERAS_CLASSES)


_built = zoo_checks.built_tower
_parameter_counts = zoo_checks.parameter_counts


@pytest.mark.parametrize('name', MODELS)
def test_trainable_parameters_match_keras_applications(name):
  spec = registry.get_model(name)
  assert spec.num_classes == 1001
  trainable, _ = _parameter_counts(_built(name, 'NHWC')[0])
  # 4,233,001 (v1) and 3,506,153 (v2) for 1001 classes.
  assert trainable == (KERAS_TRAINABLE[name]
                       + _head_difference(name, spec.num_classes))


@pytest.mark.parametrize('name', MODELS)
def test_parameters_with_batch_norm_statistics_match_keras_total(name):
  spec = registry.get_model(name)
  _, total = _parameter_counts(_built(name, 'NHWC')[0])
  assert total == KERAS_TOTAL[name] + _head_difference(name, spec.num_classes)


@pytest.mark.parametrize('data_format', ['NHWC', 'NCHW'])
@pytest.mark.parametrize('name', MODELS)
def test_logits_shape(name, data_format):
  _, out = _built(name, data_format)
  assert out.logits.shape.as_list() == [2, 1001]
  assert out.aux_logits is None


def test_mobilenet_is_v2_as_in_the_original_and_mobilenet_v2_its_alias():
  # The counts above tell v1 from v2; this ties the alias to the same network.
  assert (registry.get_model('mobilenet_v2').build
          is registry.get_model('mobilenet').build
          is mobilenet.build_mobilenet_v2)
  assert registry.get_model('mobilenet_v1').build is (
      mobilenet.build_mobilenet_v1)


@pytest.mark.parametrize('name', MODELS + ('mobilenet_v2',))
def test_registered_with_original_defaults(name):
  spec = registry.get_model(name)
  assert (spec.image_size, spec.default_batch_size) == (224, 32)
  assert spec.default_learning_rate == 0.005


@pytest.mark.parametrize('name', MODELS)
def test_trains_nhwc(name):
  losses = inspect_model.train_steps(registry.get_model(name), steps=2,
                                     batch_size=2)
  assert len(losses) == 2
  assert all(math.isfinite(loss) for loss in losses)


def test_trains_nchw_with_depthwise_convolutions_on_cpu():
  # Depthwise convolution (and its gradients) in NCHW run on CPU in
  # TF 2.21; this keeps it that way for the layout switch.
  losses = inspect_model.train_steps(registry.get_model('mobilenet'),
                                     steps=1, batch_size=2,
                                     data_format='NCHW')
  assert all(math.isfinite(loss) for loss in losses)
