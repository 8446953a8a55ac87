"""FLOP counting (flops.py): formulas, pruning, and ResNet-50's known count."""

import pytest
import tensorflow as tf

from tests.models import inspect_model
from models import registry
from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.engine_graph import model_graph
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.measure import flops

tf1 = tf.compat.v1

# Published multiply-adds per 224x224 image: ResNet-50 v1.5 (stride in the
# 3x3 of a bottleneck, e.g. torchvision's resnet50) 4.09 G; v1 (stride in
# the first 1x1, He et al. 2016 and the original tool's resnet50) 3.86 G.
RESNET50_V1_5_MACS = 4.09e9
RESNET50_V1_MACS = 3.86e9


def test_formulas_on_small_ops():
  g = tf.Graph()
  with g.as_default():
    a = tf.zeros([8, 5])
    b = tf.zeros([3, 5])
    mm = tf.matmul(a, b, transpose_b=True)            # [8, 3], k = 5
    x = tf.zeros([2, 3, 10, 10])                      # NCHW
    w = tf.zeros([3, 3, 3, 4])
    conv = tf.nn.conv2d(x, w, strides=2, padding='SAME',
                        data_format='NCHW')           # [2, 4, 5, 5]
    dw = tf.nn.depthwise_conv2d(tf.zeros([1, 6, 6, 2]),
                                tf.zeros([3, 3, 2, 2]), [1, 1, 1, 1],
                                'VALID')              # [1, 4, 4, 4]
    unfetched = tf.matmul(a, a, transpose_a=True)     # never run
  assert flops.count(mm).total == 2 * 8 * 3 * 5
  assert flops.count(conv).total == 2 * (2 * 4 * 5 * 5) * 3 * 3 * 3
  assert flops.count(dw).total == 2 * (4 * 4 * 4) * 3 * 3
  step = flops.count([mm, conv, {'dw': dw}])
  assert step.total == (2 * 8 * 3 * 5 + 2 * 200 * 27 + 2 * 64 * 9)
  assert 'MatMul' in step.by_op_type and step.unknown_shape_ops == []
  del unfetched


def test_backprop_ops_cost_as_much_as_their_forward_op():
  g = tf.Graph()
  with g.as_default():
    x = tf1.get_variable('x', [2, 8, 8, 4])
    w = tf1.get_variable('w', [3, 3, 4, 6])
    y = tf.nn.conv2d(x, w, strides=1, padding='SAME')
    # Squared, so the gradient needs y (a plain sum's would not).
    dx, dw = tf.gradients(tf.reduce_sum(y * y), [x, w])
  forward = flops.count(y).total
  assert flops.count(dx).total == 2 * forward  # the forward conv + its own
  assert flops.count(dw).total == 2 * forward
  assert flops.count([dx, dw]).total == 3 * forward


def test_depthwise_backprop_ops_cost_as_much_as_their_forward_op():
  g = tf.Graph()
  with g.as_default():
    x = tf1.get_variable('x', [2, 8, 8, 4])
    w = tf1.get_variable('w', [3, 3, 4, 2])  # channel multiplier 2
    y = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], 'SAME')
    dx, dw = tf.gradients(tf.reduce_sum(y * y), [x, w])
  forward = flops.count(y).total
  assert forward == 2 * (2 * 8 * 8 * 8) * 3 * 3
  step = flops.count([dx, dw])
  assert step.total == 3 * forward
  assert set(step.by_op_type) == {
      'DepthwiseConv2dNative', 'DepthwiseConv2dNativeBackpropInput',
      'DepthwiseConv2dNativeBackpropFilter'}


def test_resnet50_v1_5_forward_is_the_published_count():
  spec = registry.get_model('resnet50_v1.5', registry.IMAGENET)
  graph, _, out = inspect_model.build_single_tower(spec, batch_size=2,
                                                   is_training=False)
  per_image = flops.count(out.logits).per_image(2)
  assert per_image == pytest.approx(2 * RESNET50_V1_5_MACS, rel=0.01)
  # Independent check: TensorFlow's profiler, restricted to the same types,
  # agrees exactly on a forward graph (where nothing is pruned).
  with graph.as_default():
    opts = tf1.profiler.ProfileOptionBuilder.float_operation()
    opts['output'] = 'none'
    opts['account_type_regexes'] = ['Conv2D', 'MatMul']
    profiled = tf1.profiler.profile(graph, options=opts).total_float_ops
  assert profiled == flops.count(out.logits).total


def test_resnet50_training_step_is_three_forward_passes():
  params = flags.make_params(model='resnet50', device='cpu', batch_size=2,
                             result_dir='')
  rc = run_config.resolve(params)
  rc, source = driver.open_input_source(params, rc)
  built = model_graph.build(rc, source)
  forward = flops.count(built.total_loss).per_image(2)
  step = flops.count([built.step_op, built.total_loss]).per_image(2)
  assert forward == pytest.approx(2 * RESNET50_V1_MACS, rel=0.01)
  # Forward, input gradients and filter gradients; the first convolution's
  # input gradient is never needed (the session prunes it), so a bit less
  # than three.
  assert 2.9 * forward < step < 3.0 * forward
