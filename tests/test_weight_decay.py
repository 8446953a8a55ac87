"""The weight decay's gradient, summed in place (training/weight_decay.py), is the
gradient of the penalised loss bit for bit, in one pass and no buffer."""

import numpy as np
import pytest
import tensorflow as tf

from tests.driver_helpers import build_graph
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.training import weight_decay

tf1 = tf.compat.v1

RATE = 0.01


def _reference(base_loss, variables, reads, rate, loss_scale=None):
  """tf.gradients of the penalised loss: the original's arithmetic (of a
  float32 run: no loss scale)."""
  assert loss_scale is None
  penalty = rate * tf.math.add_n([tf.nn.l2_loss(r) for r in reads.values()])
  return tf.gradients(base_loss + penalty, variables)


@pytest.mark.parametrize('single_op', [False, True], ids=['per_weight',
                                                          'single_op'])
def test_gradients_are_the_penalised_loss_s_bit_for_bit(single_op):
  with tf.Graph().as_default():
    def weight(name, shape, seed):
      return tf1.get_variable(name, shape, use_resource=True,
                              initializer=tf1.random_normal_initializer(
                                  seed=seed))
    dense = weight('dense', [64, 32], 1)
    table = weight('table', [10, 32], 2)
    unused = weight('unused', [5], 3)
    with tf1.variable_scope('batchnorm'):
      beta = weight('beta', [32], 4)
    x = tf.random.normal([8, 64], seed=5)
    hidden = tf.matmul(x, dense) + tf.gather(table, [1, 7, 7]
                                             )[0] + beta
    base = tf.reduce_sum(tf.tanh(hidden))
    variables = [dense, table, unused, beta]
    penalty, reads = weight_decay.penalty_and_reads(variables, RATE,
                                                    single_op)
    got = weight_decay.gradients(base, variables, reads, RATE)
    want = tf.gradients(base + penalty, variables)
    # One scratch sum: the dense weight's (the table's gradient is sparse,
    # nothing reaches `unused` but the penalty, batch norm is not decayed).
    assert [op.type for op in tf1.get_default_graph().get_operations()
            if weight_decay.SCOPE in op.name.split('/')].count(
                'ResourceApplyGradientDescent') == 1
    with tf1.Session() as sess:
      sess.run(tf1.global_variables_initializer())
      for _ in range(2):  # the scratch variable is reused step after step
        got_values, want_values = sess.run([got, want])
        for g, w, v in zip(got_values, want_values, variables):
          assert np.array_equal(g, w), v.name


def _trained(reference, monkeypatch, **overrides):
  if reference:
    monkeypatch.setattr(weight_decay, 'gradients', _reference)
  settings = dict(model='trivial', data_name='imagenet', batch_size=8,
                  tf_random_seed=7, weight_decay=0.5)
  settings.update(overrides)
  _, _, built = build_graph(**settings)
  monkeypatch.undo()
  with tf1.Session(graph=built.graph) as sess:
    sess.run(built.init_ops)
    sess.run(built.input_init_ops)
    sess.run(built.post_init_ops)
    losses = [sess.run([built.step_op, built.total_loss])[1]
              for _ in range(3)]
    return losses, {v.op.name: sess.run(v) for v in
                    built.graph.get_collection('trainable_variables')}


@pytest.mark.parametrize('mode', [
    dict(), dict(optimizer='momentum'),
    dict(num_gpus=2, variable_update='replicated'),
    dict(num_gpus=2, variable_update='parameter_server')],
    ids=['sgd', 'momentum', 'replicated2', 'ps2'])
def test_training_is_the_original_arithmetic_bit_for_bit(mode, monkeypatch):
  losses, weights = _trained(False, monkeypatch, **mode)
  want_losses, want = _trained(True, monkeypatch, **mode)
  assert len(set(losses)) == 3  # training moved
  assert losses == want_losses
  for name, value in weights.items():
    assert np.array_equal(value, want[name]), name


def test_the_sum_takes_the_gradient_s_buffer_and_the_product_is_gone():
  params, rc, built = build_graph(model='trivial', data_name='imagenet',
                                  batch_size=8)
  ops = built.graph.get_operations()
  # No op of the penalty's gradient (its product and the AddN after it).
  assert not [op for op in ops
              if 'gradients' in op.name and 'L2Loss' in op.name]
  sums = [op for op in ops if op.type == 'ResourceApplyGradientDescent'
          and weight_decay.SCOPE in op.name.split('/')]
  assert len(sums) == len(built.graph.get_collection(
      'trainable_variables')) == 6
  config = run_config.session_config(params, rc)
  allocated = {}
  with tf1.Session(graph=built.graph, config=config) as sess:
    sess.run(built.init_ops)
    sess.run(built.input_init_ops)
    sess.run(built.step_op)
    metadata = tf1.RunMetadata()
    sess.run(built.step_op, run_metadata=metadata, options=tf1.RunOptions(
        trace_level=tf1.RunOptions.FULL_TRACE))
  for device in metadata.step_stats.dev_stats:
    for node in device.node_stats:
      if weight_decay.SCOPE in node.node_name.split('/'):
        allocated[node.node_name] = sum(m.total_bytes for m in node.memory)
  # The scratch took the gradient's 16 MB (logits) and added in place.
  assert any(n.endswith('ResourceApplyGradientDescent') for n in allocated)
  assert not any(allocated.values()), allocated


def test_each_sum_stays_on_its_gradient_s_device():
  # A tower's device function puts variable ops with the variables (here
  # tower 1's on /cpu:0; in a cluster, on the ps): the scratch must not
  # follow it, or every step would send the gradient there and back.
  _, _, built = build_graph(model='trivial', data_name='imagenet',
                            batch_size=8, num_gpus=2,
                            variable_update='parameter_server')
  graph = built.graph
  handles = [op for op in graph.get_operations()
             if op.type == 'VarHandleOp' and
             weight_decay.SCOPE in op.name.split('/')]
  assert len(handles) == 12  # 6 weights x 2 towers
  for handle in handles:
    grad = graph.get_operation_by_name(
        handle.name.split('/%s/' % weight_decay.SCOPE)[0])
    assert (tf.DeviceSpec.from_string(handle.device) ==
            tf.DeviceSpec.from_string(grad.device)), handle.name
  assert {tf.DeviceSpec.from_string(h.device).device_index
          for h in handles} == {0, 1}
