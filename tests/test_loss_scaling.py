"""float16 on the CPU, loss scaling (fixed and automatic: the original's
rule) in both engines, and --fp16_vars."""

import numpy as np
import pytest
import tensorflow as tf

from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.engine_graph import model_graph
from tf_cnn_benchmarks.engine_tf2 import strategies
from tf_cnn_benchmarks.engine_tf2 import train_step
from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.training import loss_scale
from tf_cnn_benchmarks.training import weight_decay

tf1 = tf.compat.v1

# float16 on this CPU with an automatic scale too large: the first steps'
# gradients overflow float16 and are skipped until the scale has halved
# enough (2**17 here); then every second good step doubles it (N = 1), and
# the doubled scale overflows again. A small learning rate keeps the
# applied steps from pushing the forward pass itself out of float16.
# Measured path: 2**19, 2**18, 2**17, 2**17, 2**18, 2**17, 2**17, ...
OVERFLOWING = dict(
    model='trivial', device='cpu', batch_size=8, use_fp16=True,
    fp16_dtype='float16', fp16_enable_auto_loss_scale=True,
    fp16_loss_scale=2.0 ** 20, fp16_inc_loss_scale_every_n=1,
    optimizer='momentum', init_learning_rate=1e-5, num_batches=1,
    num_warmup_batches=0, result_dir='')
STEPS = 12


def _rule(scale, count, finite, every_n):
  """The original's rule: (scale, count) after a step."""
  if not finite:
    return scale / 2, 0
  if count < every_n:
    return scale, count + 1
  return scale * 2, 0


def _check_path(rows, every_n):
  """rows: per step (scale, count, global step, weights) before it, and the
  same after it. A step that changed no weight is a skipped one; the scale
  and the count follow the rule; the global step counts every step."""
  skipped = grown = 0
  for before, after in rows:
    scale, count, step, weights = before
    scale_after, count_after, step_after, weights_after = after
    unchanged = all(np.array_equal(a, b)
                    for a, b in zip(weights, weights_after))
    assert (scale_after, count_after) == _rule(scale, count, not unchanged,
                                               every_n), (before[:3], after[:3])
    assert step_after == step + 1
    skipped += unchanged
    grown += scale_after > scale
  return skipped, grown


def test_graph_engine_skips_overflowing_float16_steps_and_steers_the_scale():
  params = flags.make_params(**OVERFLOWING)
  rc = run_config.resolve(params)
  assert rc.compute_dtype == tf.float16
  rc, source = driver.open_input_source(params, rc)
  built = model_graph.build(rc, source)
  scaler = built.loss_scale
  with built.graph.as_default():
    weights = tf1.trainable_variables()
  with tf1.Session(graph=built.graph) as sess:
    sess.run(built.init_ops)
    sess.run(built.input_init_ops)

    def state():
      return sess.run([scaler.scale, scaler.good_steps, built.global_step,
                       weights])
    rows = []
    for _ in range(STEPS):
      before = state()
      sess.run(built.step_op)
      rows.append((before, state()))
  assert rows[0][0][0] == 2.0 ** 20
  # The first step overflowed and was skipped.
  assert rows[0][1][0] == 2.0 ** 19
  skipped, grown = _check_path(rows, every_n=1)
  assert skipped >= 1 and grown >= 1 and skipped < STEPS


def test_tf2_engine_skips_overflowing_float16_steps_and_steers_the_scale():
  params = flags.make_params(engine='tf2', **OVERFLOWING)
  rc = run_config.resolve(params)
  rc, source = driver.open_input_source(params, rc)
  trainer = train_step.Trainer(rc, strategies.choose(rc), source)
  scaler = trainer.loss_scale
  weights = trainer.store.trainable_variables

  def state():
    return (float(scaler.scale.numpy()), int(scaler.good_steps.numpy()),
            trainer.global_step(), [w.numpy() for w in weights])
  rows = []
  for _ in range(STEPS):
    before = state()
    trainer.step()
    rows.append((before, state()))
  assert rows[0][1][0] == 2.0 ** 19
  skipped, grown = _check_path(rows, every_n=1)
  assert skipped >= 1 and grown >= 1 and skipped < STEPS


def test_the_rule_step_by_step_on_scripted_gradients():
  """Gradients made non-finite on purpose: skipped steps move nothing, the
  scale halves; the third good step in a row (N = 2) doubles it."""
  scaling = run_config.LossScaling(8.0, True, 2)
  graph = tf.Graph()
  with graph.as_default():
    scaler = loss_scale.LossScale.in_graph(scaling, '/cpu:0')
    var = tf1.get_variable('w', initializer=tf.constant([1.0, 2.0]))
    grad = tf1.placeholder(tf.float32, [2])
    opt = tf1.train.MomentumOptimizer(0.5, 0.9)
    step = scaler.update_or_skip(
        [grad], lambda: opt.apply_gradients([(grad, var)]), lambda: None)
    init = [tf1.global_variables_initializer(),
            tf1.local_variables_initializer()]
  feeds = [np.inf, 1.0, 1.0, 1.0, np.nan, 1.0]
  scales, counts, moved = [], [], []
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    for value in feeds:
      before = sess.run(var)
      sess.run(step, {grad: [value, 1.0]})
      scales.append(sess.run(scaler.scale))
      counts.append(sess.run(scaler.good_steps))
      moved.append(not np.array_equal(before, sess.run(var)))
  assert scales == [4, 4, 4, 8, 4, 4]
  assert counts == [0, 1, 2, 0, 0, 1]
  assert moved == [False, True, True, True, False, True]


def test_a_fixed_scale_keeps_float16_gradients_from_flushing_to_zero():
  """A gradient of 1e-8 is 0 in float16; computed scaled by 1024 (and
  unscaled in float32) it survives, as the original's scale meant."""
  def gradient(scaling):
    graph = tf.Graph()
    with graph.as_default():
      w = tf1.get_variable('w', initializer=tf.constant([1.0, 2.0]))
      half = tf.cast(w, tf.float16)
      loss = tf.cast(tf.reduce_sum(half), tf.float32) * 1e-8
      scaler = (loss_scale.LossScale.in_graph(scaling, '/cpu:0')
                if scaling else None)
      (g,) = weight_decay.gradients(loss, [w], {}, 0.0, scaler)
      with tf1.Session(graph=graph) as sess:
        sess.run(tf1.global_variables_initializer())
        return sess.run(g)
  assert gradient(None).tolist() == [0.0, 0.0]
  assert gradient(run_config.LossScaling(1024.0, False, 1000)) == (
      pytest.approx([1e-8, 1e-8], rel=1e-2))


@pytest.mark.parametrize('settings, dtype, scale', [
    (dict(), tf.bfloat16, None),
    (dict(fp16_dtype='float16'), tf.float16, 128.0),
    (dict(fp16_dtype='float16', fp16_loss_scale=1.0), tf.float16, None),
    (dict(fp16_loss_scale=64.0), tf.bfloat16, 64.0),
    (dict(fp16_enable_auto_loss_scale=True), tf.bfloat16, 1.0),
])
def test_cpu_defaults_and_what_the_flags_choose(settings, dtype, scale):
  rc = run_config.resolve(flags.make_params(
      device='cpu', use_fp16=True, result_dir='', **settings))
  assert rc.compute_dtype == dtype
  assert (rc.loss_scaling.initial if rc.loss_scaling else None) == scale
  assert rc.variable_dtype == tf.float32


def test_a_gpu_computes_float16_as_the_original(monkeypatch):
  monkeypatch.setattr(run_config, 'gpus_available', lambda: True)
  rc = run_config.resolve(flags.make_params(use_fp16=True, result_dir=''))
  assert rc.compute_dtype == tf.float16
  assert rc.loss_scaling == run_config.LossScaling(128.0, False, 1000)
  # Evaluation computes no gradients: nothing to scale.
  rc = run_config.resolve(flags.make_params(
      use_fp16=True, forward_only=True, result_dir=''))
  assert rc.loss_scaling is None


def test_fp16_vars_keep_weights_in_half_precision_and_train():
  params = flags.make_params(
      model='resnet20', data_name='cifar10', device='cpu', batch_size=2,
      use_fp16=True, fp16_dtype='float16', fp16_vars=True,
      optimizer='momentum', num_batches=1, num_warmup_batches=0,
      result_dir='')
  rc = run_config.resolve(params)
  assert rc.variable_dtype == tf.float16
  rc, source = driver.open_input_source(params, rc)
  built = model_graph.build(rc, source)
  with built.graph.as_default():
    dtypes = {v.op.name: v.dtype.base_dtype
              for v in tf1.trainable_variables()}
  assert any(name.endswith('kernel') for name in dtypes)
  for name, dtype in dtypes.items():
    assert dtype == (tf.float32 if '/batchnorm/' in name else tf.float16), (
        name)
  with tf1.Session(graph=built.graph) as sess:
    sess.run(built.init_ops)
    sess.run(built.input_init_ops)
    losses = [sess.run([built.step_op, built.total_loss])[1]
              for _ in range(3)]
  assert all(np.isfinite(losses)) and losses[0] != losses[-1]


@pytest.mark.parametrize('settings, phrase', [
    (dict(fp16_loss_scale=8.0), 'add --use_fp16'),
    (dict(fp16_dtype='float16'), 'add --use_fp16'),
    (dict(use_fp16=True, fp16_loss_scale=0.0), 'must be > 0'),
    (dict(use_fp16=True, fp16_enable_auto_loss_scale=True,
          variable_update='collective_all_reduce', job_name='worker',
          worker_hosts='a:1,b:2'), 'in a single process'),
    (dict(use_fp16=True, fp16_vars=True, variable_update='replicated',
          gradient_repacking=2), '--gradient_repacking'),
])
def test_precision_flags_that_cannot_go_together(settings, phrase):
  with pytest.raises(flags.UsageError) as e:
    flags.make_params(**settings)
  assert phrase in str(e.value)


def test_tf2_engine_trains_half_precision_weights():
  params = flags.make_params(
      model='resnet20', data_name='cifar10', device='cpu', batch_size=2,
      use_fp16=True, fp16_dtype='float16', fp16_vars=True, engine='tf2',
      optimizer='momentum', num_batches=1, num_warmup_batches=0,
      result_dir='')
  rc = run_config.resolve(params)
  rc, source = driver.open_input_source(params, rc)
  trainer = train_step.Trainer(rc, strategies.choose(rc), source)
  for var in trainer.store.trainable_variables:
    assert var.dtype == (tf.float32 if '/batchnorm/' in var.name
                         else tf.float16), var.name
  losses = [trainer.step() for _ in range(3)]
  assert all(np.isfinite(losses)) and losses[0] != losses[-1]
