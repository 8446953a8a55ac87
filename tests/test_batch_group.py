"""--batch_group_size: N steps per session.run, same training, same records."""

import numpy as np
import pytest
import tensorflow as tf

from tests.driver_helpers import run_quietly
from tf_cnn_benchmarks.engine_graph import batch_group
from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.engine_graph import model_graph
from tf_cnn_benchmarks.config import run_config

tf1 = tf.compat.v1


def _train(group_size, steps, **overrides):
  """Final variable values and the losses of ``steps`` steps."""
  settings = dict(model='resnet20', data_name='cifar10', device='cpu',
                  batch_size=4, result_dir='', optimizer='momentum')
  settings.update(overrides)
  params = flags.make_params(**settings)
  rc = run_config.resolve(params)
  rc, source = driver.open_input_source(params, rc)
  built = model_graph.build(rc, source)
  fetches = {'step': built.step_op, 'loss': built.total_loss}
  grouped = batch_group.chain(built.graph, fetches, group_size)
  with built.graph.as_default():
    variables = tf1.global_variables()
  built.graph.finalize()
  with tf1.Session(graph=built.graph) as sess:
    sess.run(built.init_ops)
    sess.run(built.input_init_ops)
    runner = batch_group.SessionStepRunner(sess.run, grouped, group_size)
    losses = [float(runner.step().values['loss']) for _ in range(steps)]
    return sess.run(variables), losses


def test_grouped_steps_train_exactly_like_single_steps():
  # Batch norm's moving statistics, momentum slots and the global step are
  # all in the compared variables: every copy updates the same state, in
  # order.
  single_vars, single_losses = _train(1, 4)
  grouped_vars, grouped_losses = _train(2, 4)
  assert grouped_losses == pytest.approx(single_losses, rel=1e-5)
  assert len(single_vars) == len(grouped_vars)
  for a, b in zip(single_vars, grouped_vars):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_replicated_towers_group_too():
  common = dict(model='trivial', num_gpus=2, variable_update='replicated',
                init_learning_rate=1e-4)
  single_vars, single_losses = _train(1, 4, **common)
  grouped_vars, grouped_losses = _train(2, 4, **common)
  assert np.isfinite(single_losses).all()
  assert grouped_losses == pytest.approx(single_losses, rel=1e-5)
  for a, b in zip(single_vars, grouped_vars):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_driver_records_every_step_of_every_group():
  # 5 steps in groups of 2: rounded up to 3 whole groups = 6 timed steps,
  # each step charged its group's time / 2, each with its own loss.
  result, text = run_quietly(model='trivial', batch_group_size=2,
                             num_batches=5, num_warmup_batches=1,
                             peak_gflops=100.0)
  assert result.status == 'ok', text
  assert 'rounded up to 6' in text
  times = result.times
  assert times.num_steps == 6 and len(times.losses) == 6
  assert len(times.warmup) == 2
  assert times.timed[0] == times.timed[1] and times.timed[2] == times.timed[3]
  assert result.record['summary']['num_steps'] == 6
  assert result.images_per_sec > 0


def test_cluster_tasks_refuse_groups():
  with pytest.raises(flags.UsageError, match='single process'):
    flags.make_params(model='trivial', batch_group_size=2, job_name='worker',
                      worker_hosts='localhost:1', ps_hosts='localhost:2',
                      variable_update='parameter_server')
