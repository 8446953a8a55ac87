"""NASNet-A Mobile and Large: published counts, cell shapes, training."""

import math

import numpy as np
import pytest
import tensorflow as tf

from tests.models import inspect_model
from models import layers
from models import nasnet
from models import registry
from tests.models import zoo_checks

tf1 = tf.compat.v1

# keras.applications NASNetMobile (224 px) and NASNetLarge (331 px), 1000
# classes, as printed by model.summary(): keras.io gives the totals, the
# trainable / non-trainable split was reproduced with keras 3.15
# (keras.applications.NASNetMobile(weights=None)). keras ports the authors'
# TF-slim checkpoints, so the architectures are the same; the non-trainable
# part is the batch-norm moving mean and variance, which we create too but do
# not count as trainable. Zoph et al. 2018, table 2, give 5.3 M and 88.9 M:
# the keras totals rounded (so the paper counted the statistics as well).
KERAS_TOTAL = {'nasnet': 5_326_716, 'nasnetlarge': 88_949_818}
KERAS_TRAINABLE = {'nasnet': 5_289_978, 'nasnetlarge': 88_753_150}
KERAS_CLASSES = 1000

# Channels entering the classifier: the "@1056" / "@4032" of the names.
FEATURES = {'nasnet': 1056, 'nasnetlarge': 4032}

MODELS = ('nasnet', 'nasnetlarge')


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
  # 5,291,035 (Mobile) and 88,757,183 (Large) for 1001 classes.
  assert trainable == (KERAS_TRAINABLE[name]
                       + _head_difference(name, spec.num_classes))


@pytest.mark.parametrize('name', MODELS)
def test_parameters_with_batch_norm_statistics_match_keras_total(name):
  spec = registry.get_model(name)
  _, total = _parameter_counts(_built(name, 'NHWC')[0])
  assert total == KERAS_TOTAL[name] + _head_difference(name, spec.num_classes)


# NHWC builds are shared with the count tests; one NCHW build covers the
# layout code, which is the same for both sizes (Large's takes ~10 s more).
@pytest.mark.parametrize('name, data_format', [
    ('nasnet', 'NHWC'), ('nasnetlarge', 'NHWC'), ('nasnet', 'NCHW')])
def test_logits_shape(name, data_format):
  _, out = _built(name, data_format)
  assert out.logits.shape.as_list() == [2, 1001]
  # No auxiliary head (the original tool trained without one).
  assert out.aux_logits is None


def test_registered_with_original_defaults():
  mobile, large = (registry.get_model(name) for name in MODELS)
  assert (mobile.image_size, mobile.default_batch_size) == (224, 32)
  assert (large.image_size, large.default_batch_size) == (331, 16)
  assert mobile.default_learning_rate == large.default_learning_rate == 0.005


def test_cell_plans_follow_n_at_p():
  for config, normal_per_stack, first_filters in (
      (nasnet.NASNET_MOBILE, 4, 44), (nasnet.NASNET_LARGE, 6, 168)):
    plan = nasnet.cell_plan(config)
    kinds = ''.join('N' if c.spec is nasnet.NORMAL_CELL else 'R' for c in plan)
    n = 'N' * normal_per_stack
    assert kinds == 'RR' + n + 'R' + n + 'R' + n
    assert [c.filters for c in plan[:2]] == [first_filters // 4,
                                             first_filters // 2]
    # The last cell's 6 concatenated states give the penultimate filters.
    assert 6 * plan[-1].filters == config.penultimate_filters
  # Only Large's first normal cell after each reduction skips an input.
  large = nasnet.cell_plan(nasnet.NASNET_LARGE)
  assert [c.scope for c in large if c.h_prev_back == 3] == ['cell_6',
                                                             'cell_12']
  assert all(c.h_prev_back == 2 for c in nasnet.cell_plan(
      nasnet.NASNET_MOBILE))


@pytest.mark.parametrize('data_format', ['NHWC', 'NCHW'])
def test_cell_output_shapes(data_format):
  # Odd sizes as in NASNet Large (21 -> 11): h_prev's factorized reduction
  # must land on the same size as h.
  with tf.Graph().as_default():
    b = layers.Builder(data_format=data_format)

    def activation(size, channels):
      return b.to_layout(tf.zeros([1, size, size, channels]))

    h, h_prev = activation(11, 12), activation(21, 6)
    with tf1.variable_scope('normal'):
      normal = nasnet.build_cell(b, nasnet.NORMAL_CELL, h, h_prev, 4)
    with tf1.variable_scope('reduction'):
      reduction = nasnet.build_cell(b, nasnet.REDUCTION_CELL, h, h_prev, 4)
    assert (b.spatial(normal), b.channels(normal)) == ((11, 11), 6 * 4)
    assert (b.spatial(reduction), b.channels(reduction)) == ((6, 6), 4 * 4)


def test_factorized_reduction_second_path_is_shifted_one_pixel():
  image = np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape([2, 4, 4, 3])
  expected = np.zeros_like(image)
  expected[:, :-1, :-1, :] = image[:, 1:, 1:, :]
  with tf.Graph().as_default(), tf1.Session() as sess:
    nhwc = nasnet._shift_one_pixel(layers.Builder('NHWC'), image)
    nchw = nasnet._shift_one_pixel(layers.Builder('NCHW'),
                                   image.transpose([0, 3, 1, 2]))
    nhwc, nchw = sess.run([nhwc, nchw])
  np.testing.assert_array_equal(nhwc, expected)
  np.testing.assert_array_equal(nchw.transpose([0, 2, 3, 1]), expected)


# NHWC training is models/test_every_model_learns.py's (nasnet, both
# engines); Large's cells are Mobile's (test_zoo_training.py's
# LARGER_TWINS), its wiring built by the tests above.
def test_nasnet_mobile_trains_nchw():
  # Separable convolutions, pooling and the shifted slice all run in NCHW
  # on CPU in TF 2.21.
  losses = inspect_model.train_steps(registry.get_model('nasnet'), steps=1,
                                     batch_size=1, data_format='NCHW')
  assert all(math.isfinite(loss) for loss in losses)
