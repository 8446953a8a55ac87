"""--all_reduce_spec=nccl builds TensorFlow's NCCL all-reduce on the GPU
towers (built here, never run: no GPU), and stops at once on CPU towers;
--hierarchical_copy builds the original's two-level copies (and runs on
CPU towers)."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from tests.driver_helpers import run_cli
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.engine_graph import model_graph
from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.variable_update import all_reduce
from tf_cnn_benchmarks.variable_update import all_reduce_spec
from tf_cnn_benchmarks.variable_update import base

tf1 = tf.compat.v1


def _gpu_graph(monkeypatch, num_gpus=4, **overrides):
  """The run's graph for towers /gpu:0 .. /gpu:N-1, as on a machine with N
  GPUs: built, never run (this machine has none)."""
  monkeypatch.setattr(run_config, 'gpus_available', lambda: True)
  settings = dict(model='trivial', batch_size=2, num_gpus=num_gpus,
                  variable_update='replicated', result_dir='')
  settings.update(overrides)
  params = flags.make_params(**settings)
  rc = run_config.resolve(params)
  assert rc.tower_devices == ['/gpu:%d' % i for i in range(num_gpus)]
  rc, source = driver.open_input_source(params, rc)
  return model_graph.build(rc, source)


def _nccl_ops(graph):
  return [op for op in graph.get_operations() if op.type == 'NcclAllReduce']


def _gpu_index(op):
  spec = tf.DeviceSpec.from_string(op.device)
  assert spec.device_type == 'GPU', op.device
  return spec.device_index


@pytest.mark.parametrize('spec', ['nccl', 'nccl/xring', 'nccl/rechd',
                                  'nccl/pscpu'])
def test_nccl_all_reduce_is_built_on_the_gpu_towers(monkeypatch, spec):
  built = _gpu_graph(monkeypatch, all_reduce_spec=spec)
  with built.graph.as_default():
    num_gradients = len([v for v in tf1.trainable_variables()
                         if v.op.name.startswith('v0/')])
  ops = _nccl_ops(built.graph)
  # One NCCL op per tower per gradient, on that tower's GPU; the four of a
  # gradient share one NCCL communicator (its shared name).
  assert len(ops) == 4 * num_gradients
  by_group = collections.defaultdict(list)
  for op in ops:
    by_group[op.get_attr('shared_name')].append(_gpu_index(op))
    assert op.get_attr('num_devices') == 4
    assert op.get_attr('reduction') == b'sum'
  assert len(by_group) == num_gradients
  assert all(sorted(towers) == [0, 1, 2, 3] for towers in by_group.values())
  # Every tower's optimizer applies its own copy of the mean, on its GPU.
  applies = [op for op in built.graph.get_operations()
             if op.type.startswith('ResourceApply')]
  assert sorted({_gpu_index(op) for op in applies}) == [0, 1, 2, 3]


def test_nccl_takes_the_size_range_it_is_given(monkeypatch):
  """pscpu:1k:nccl: small gradients summed on the CPU, large ones by
  NCCL."""
  built = _gpu_graph(monkeypatch, num_gpus=2,
                     all_reduce_spec='pscpu:1k:nccl')
  with built.graph.as_default():
    sizes = [v.shape.num_elements() for v in tf1.trainable_variables()
             if v.op.name.startswith('v0/')]
  large = sum(1 for n in sizes if n > 1024)
  assert 0 < large < len(sizes)
  assert len(_nccl_ops(built.graph)) == 2 * large


def test_nccl_needs_gpu_devices_to_build():
  graph = tf.Graph()
  with graph.as_default():
    tensors = []
    for i in range(2):
      with tf1.device('/cpu:%d' % i):
        tensors.append(tf.ones([3]))
    opts = all_reduce.Options(ranges=all_reduce_spec.parse('nccl'))
    with pytest.raises(ValueError, match='reduces between GPUs'):
      all_reduce.batch_mean([[t] for t in tensors], ['/cpu:0', '/cpu:1'],
                            opts)


def test_on_cpu_towers_nccl_stops_with_one_line_before_building():
  """The original README's GPU command line on this machine (no GPU)."""
  out = run_cli('--model=resnet50', '--batch_size=64', '--num_gpus=8',
                '--variable_update=replicated', '--all_reduce_spec=nccl',
                '--use_fp16', '--result_dir=')
  assert out.returncode == exit_codes.USAGE, out.stdout + out.stderr
  lines = out.stderr.strip().splitlines()
  assert len(lines) == 1, out.stderr
  assert 'NCCL, between GPUs' in lines[0]
  assert 'no GPU is visible to TensorFlow' in lines[0]
  assert 'xring or pscpu' in lines[0]
  # Nothing was built: no header, no graph.
  assert out.stdout == ''


def test_nccl_is_still_refused_where_the_original_refused_it():
  with pytest.raises(flags.UsageError, match='only replicated'):
    flags.make_params(variable_update='parameter_server',
                      all_reduce_spec='nccl')
  with pytest.raises(flags.UsageError, match='NCCL'):
    flags.make_params(variable_update='replicated', all_reduce_spec='nccl',
                      use_fp16=True, fp16_vars=True)
  with pytest.raises(flags.UsageError,
                     match='refused automatic loss scaling with NCCL'):
    flags.make_params(variable_update='replicated', all_reduce_spec='nccl',
                      use_fp16=True, fp16_enable_auto_loss_scale=True)


# -- --hierarchical_copy


def _hierarchical_means(devices, topology, values):
  """(device of each gradient's two half sums, the means per tower)."""
  graph = tf.Graph()
  with graph.as_default():
    towers = []
    for d, device in enumerate(devices):
      with tf1.device(device):
        towers.append([tf.constant(np.float32(d + 1) *
                                   np.array(v, np.float32)) for v in values])
    opts = all_reduce.Options(ranges=all_reduce_spec.parse('spread'),
                              hierarchical=topology)
    means = all_reduce.batch_mean(towers, devices, opts)
    sums = [op for op in graph.get_operations() if op.type == 'AddN']
    config = tf1.ConfigProto(device_count={'CPU': len(devices)})
    with tf1.Session(graph=graph, config=config) as sess:
      return ([tf.DeviceSpec.from_string(op.device).device_index
               for op in sums], sess.run(means))


@pytest.mark.parametrize('topology, mains', [
    # Per gradient: first half's sum, second half's, their sum.
    ('dgx1', [0, 4, 0, 1, 5, 1, 2, 6, 2, 3, 7, 3, 4, 0, 4]),
    ('gcp_v100', [0, 5, 0, 2, 7, 2, 5, 0, 5, 7, 2, 7, 0, 5, 0]),
])
def test_hierarchical_copy_sums_on_the_topologys_main_towers(topology,
                                                              mains):
  devices = ['/cpu:%d' % i for i in range(8)]
  values = [[1.0, 2.0]] * 5  # five gradients
  placed, means = _hierarchical_means(devices, topology, values)
  assert placed == mains
  # Towers hold v, 2v, ..., 8v: the mean is 4.5v on every tower.
  for tower in means:
    for mean in tower:
      assert mean.tolist() == [4.5, 9.0]


def test_hierarchical_copy_trains_like_the_default_reduction():
  def train(**overrides):
    params = flags.make_params(
        model='trivial', data_name='cifar10', device='cpu', batch_size=2,
        num_gpus=4, variable_update='replicated', optimizer='momentum',
        init_learning_rate=1e-3, result_dir='', **overrides)
    rc = run_config.resolve(params)
    rc, source = driver.open_input_source(params, rc)
    built = model_graph.build(rc, source)
    with built.graph.as_default():
      variables = tf1.trainable_variables()
    config = run_config.session_config(params, rc)
    with tf1.Session(graph=built.graph, config=config) as sess:
      sess.run(built.init_ops)
      sess.run(built.input_init_ops)
      sess.run(built.post_init_ops)
      for _ in range(3):
        sess.run(built.step_op)
      copies = collections.defaultdict(list)
      for v, value in zip(variables, sess.run(variables)):
        copies[base.canonical_name(v)].append(value)
    return built.graph, copies
  graph, copies = train(hierarchical_copy=True)
  # Three sums per gradient (each half's, then theirs), where the default
  # has one.
  sums = [op for op in graph.get_operations()
          if op.name.startswith('allreduce') and op.type == 'AddN']
  assert len(sums) == 3 * len(copies)
  _, reference = train()
  for name, values in copies.items():
    for value in values:
      np.testing.assert_allclose(value, reference[name][0], rtol=1e-5,
                                 atol=1e-7, err_msg=name)


@pytest.mark.parametrize('settings, phrase', [
    (dict(num_gpus=3), 'even --num_gpus'),
    (dict(num_gpus=1), 'even --num_gpus'),
    (dict(num_gpus=4, network_topology='gcp_v100'), 'among 8'),
    (dict(num_gpus=4, all_reduce_spec='xring'), 'give one of them'),
    (dict(num_gpus=4, variable_update='independent'), 'replicated'),
])
def test_hierarchical_copy_refuses_what_it_cannot_split(settings, phrase):
  settings.setdefault('variable_update', 'replicated')
  with pytest.raises(flags.UsageError) as e:
    flags.make_params(hierarchical_copy=True, **settings)
  assert phrase in str(e.value)
