"""Replicated mode's all-reduce flags: each changes the graph's ops as it
says, and training still computes the same thing."""

import collections
import math

import numpy as np
import pytest
import tensorflow as tf

from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.engine_graph import model_graph
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.variable_update import all_reduce_spec
from tf_cnn_benchmarks.variable_update import base

tf1 = tf.compat.v1

# Every example spec of the original's documentation and flag help.
ORIGINAL_SPECS = ('collective', 'collective#2', 'xring', 'xring#2', 'nccl',
                  'nccl/xring', 'nccl/rechd', 'nccl/pscpu', 'pscpu',
                  'psgpu#4', 'pscpu:2k:pscpu#2:64k:xring', 'pscpu/pscpu#2',
                  'pscpu:32k:xring', 'pscpu/pscpu')


def _settings(**overrides):
  settings = dict(model='trivial', data_name='cifar10', device='cpu',
                  batch_size=2, num_gpus=3, variable_update='replicated',
                  init_learning_rate=1e-4, optimizer='momentum',
                  result_dir='')
  settings.update(overrides)
  return settings


def _build(**overrides):
  params = flags.make_params(**_settings(**overrides))
  rc = run_config.resolve(params)
  rc, source = driver.open_input_source(params, rc)
  return model_graph.build(rc, source)


def _train(steps=3, **overrides):
  """({canonical name: [value per tower]}, losses) after ``steps`` steps."""
  built = _build(**overrides)
  with built.graph.as_default():
    variables = tf1.trainable_variables()
  with tf1.Session(graph=built.graph) as sess:
    sess.run(built.init_ops)
    sess.run(built.input_init_ops)
    sess.run(built.post_init_ops)
    losses = [float(sess.run([built.step_op, built.total_loss])[1])
              for _ in range(steps)]
    values = sess.run(variables)
  copies = collections.defaultdict(list)
  for v, value in zip(variables, values):
    copies[base.canonical_name(v)].append(value)
  return copies, losses


def _assert_trains_like(reference, copies, rtol=1e-5, atol=1e-7):
  """Every tower's copy equal, and equal to the reference run's."""
  assert sorted(copies) == sorted(reference)
  for name, values in copies.items():
    for value in values[1:]:
      np.testing.assert_array_equal(values[0], value, err_msg=name)
    np.testing.assert_allclose(values[0], reference[name][0], rtol=rtol,
                               atol=atol, err_msg=name)


@pytest.fixture(scope='module')
def spread_run():
  """The default reduction: the reference every flag must match."""
  copies, losses = _train()
  assert losses[0] != losses[-1]  # training moves
  return copies


def _ops(graph, scope_prefix='', op_type=None):
  return [op for op in graph.get_operations()
          if op.name.startswith(scope_prefix) and
          (op_type is None or op.type == op_type)]


def _allreduce_scopes(graph):
  return {op.name.split('/')[0] for op in _ops(graph, 'allreduce')}


def _num_gradients(graph):
  with graph.as_default():
    return len([v for v in tf1.trainable_variables()
                if v.op.name.startswith('v0/')])


# -- the spec's grammar


@pytest.mark.parametrize('spec', ORIGINAL_SPECS)
def test_every_original_spec_parses_and_runs_or_says_why_not(spec):
  # absl takes any string now: no "allowed values" error.
  fv = flags.parse_flag_values(['prog', '--all_reduce_spec=' + spec])
  assert fv.all_reduce_spec == spec
  # (nccl parses too; on CPU towers the run stops before building:
  # tests/test_nccl_and_hierarchical_copy.py.)
  try:
    flags.make_params(variable_update='replicated', all_reduce_spec=spec)
  except flags.UsageError as e:
    assert 'collective' in spec, e
    assert 'collective_all_reduce' in str(e)
  else:
    assert 'collective' not in spec


def test_spec_ranges_parse_like_the_originals():
  assert all_reduce_spec.parse('pscpu:2k:pscpu#2:64k:xring') == (
      all_reduce_spec.Range('pscpu', 1, 2048),
      all_reduce_spec.Range('pscpu', 2, 65536),
      all_reduce_spec.Range('xring', 1, -1))
  flags.make_params(variable_update='collective_all_reduce',
                    all_reduce_spec='collective', job_name='worker',
                    worker_hosts='localhost:1')


@pytest.mark.parametrize('spec, phrase', [
    ('ring', "unknown algorithm 'ring'"),
    ('pscpu:32q:xring', "size limit '32q'"),
    ('pscpu:32k', 'expected algorithm[:size:algorithm...]'),
    ('xring#two', "shards 'two'"),
])
def test_bad_specs_are_usage_errors(spec, phrase):
  with pytest.raises(flags.UsageError) as e:
    flags.make_params(variable_update='replicated', all_reduce_spec=spec)
  assert phrase in str(e.value)


def test_psgpu_without_gpu_towers_fails_saying_why():
  with pytest.raises(ValueError, match='psgpu reduces on GPUs'):
    _build(all_reduce_spec='psgpu')


@pytest.mark.parametrize('overrides', [
    dict(variable_update='parameter_server', gradient_repacking=2),
    dict(variable_update='independent', agg_small_grads_max_bytes=100),
    dict(variable_update='parameter_server', variable_consistency='relaxed'),
])
def test_tuning_flags_outside_their_modes_are_usage_errors(overrides):
  with pytest.raises(flags.UsageError):
    flags.make_params(**overrides)


def test_network_topology_is_accepted_and_changes_nothing():
  fv = flags.parse_flag_values(['prog', '--network_topology=gcp_v100'])
  assert fv.network_topology == 'gcp_v100'


# -- each algorithm and flag: its ops, and the same training


def test_xring_is_a_chain_of_adds_around_the_towers(spread_run):
  built = _build(all_reduce_spec='xring')
  adds = _ops(built.graph, 'allreduce', 'AddV2')
  n = 3
  # Per gradient: n pieces, each summed by n-1 adds around the ring.
  assert len(adds) == _num_gradients(built.graph) * n * (n - 1)
  assert {op.device for op in adds} == {
      '/device:CPU:%d' % i for i in range(n)}
  for op in adds:
    inner = op.inputs[0].op
    if inner.type == 'AddV2':  # the running sum came from the previous tower
      assert inner.device != op.device
  assert not _ops(built.graph, 'allreduce', 'AddN')
  copies, _ = _train(all_reduce_spec='xring')
  _assert_trains_like(spread_run, copies)


def test_two_rings_split_each_gradient_twice_as_fine(spread_run):
  built = _build(all_reduce_spec='xring#2')
  assert len(_ops(built.graph, 'allreduce', 'AddV2')) == (
      _num_gradients(built.graph) * 2 * 3 * 2)
  copies, _ = _train(all_reduce_spec='xring#2')
  _assert_trains_like(spread_run, copies)


def test_pscpu_sums_every_gradient_on_the_cpu(spread_run):
  built = _build(all_reduce_spec='pscpu#2')
  sums = _ops(built.graph, 'allreduce', 'AddN')
  assert len(sums) == 2 * _num_gradients(built.graph)  # two shards each
  assert {op.device for op in sums} == {'/device:CPU:0'}
  copies, _ = _train(all_reduce_spec='pscpu#2')
  _assert_trains_like(spread_run, copies)


def test_size_ranges_pick_the_algorithm_by_gradient_size(spread_run):
  built = _build(all_reduce_spec='pscpu:1k:xring')
  with built.graph.as_default():
    sizes = [v.shape.num_elements() for v in tf1.trainable_variables()
             if v.op.name.startswith('v0/')]
  small = sum(1 for s in sizes if s <= 1024)
  assert 0 < small < len(sizes)
  assert len(_ops(built.graph, 'allreduce', 'AddN')) == small
  assert len(_ops(built.graph, 'allreduce', 'AddV2')) == (
      (len(sizes) - small) * 3 * 2)
  copies, _ = _train(all_reduce_spec='pscpu:1k:xring')
  _assert_trains_like(spread_run, copies)


def test_small_gradients_are_concatenated_then_split(spread_run):
  overrides = dict(all_reduce_spec='pscpu', agg_small_grads_max_bytes=1 << 30,
                   agg_small_grads_max_group=2)
  built = _build(**overrides)
  n = _num_gradients(built.graph)
  groups = n // 2  # every gradient is "small"; pairs of neighbours
  assert len(_ops(built.graph, 'aggregate_small', 'ConcatV2')) == 3 * groups
  assert len(_ops(built.graph, 'split_small', 'SplitV')) == 3 * groups
  # One reduction per group (plus an odd one out).
  assert len(_ops(built.graph, 'allreduce', 'AddN')) == groups + n % 2
  copies, _ = _train(**overrides)
  _assert_trains_like(spread_run, copies)


def test_gradient_repacking_reduces_n_chunks(spread_run):
  built = _build(gradient_repacking=3)
  # One all-reduce per chunk, not per gradient.
  assert len(_allreduce_scopes(built.graph)) == 3
  assert len(_ops(built.graph, 'allreduce', 'AddN')) == 3
  copies, _ = _train(gradient_repacking=3)
  _assert_trains_like(spread_run, copies)


def test_merge_scope_groups_gradients_under_one_scope(spread_run):
  n = _num_gradients(_build().graph)
  assert len(_allreduce_scopes(_build().graph)) == n
  built = _build(allreduce_merge_scope=3)
  assert len(_allreduce_scopes(built.graph)) == math.ceil(n / 3)
  copies, _ = _train(allreduce_merge_scope=3)
  _assert_trains_like(spread_run, copies)
  # What its help says: no ScopedAllocator is turned on, at any value.
  params = flags.make_params(**_settings(allreduce_merge_scope=3))
  rewrite = run_config.session_config(
      params, run_config.resolve(params)).graph_options.rewrite_options
  assert rewrite.scoped_allocator_optimization == rewrite.DEFAULT
  assert not rewrite.scoped_allocator_opts.enable_op


def _reductions_dtypes(graph):
  return {op.get_attr('T') for op in _ops(graph, 'allreduce', 'AddN')}


def test_compact_gradient_transfer_reduces_in_the_compute_dtype():
  compact = _build(use_fp16=True)
  full = _build(use_fp16=True, compact_gradient_transfer=False)
  assert _reductions_dtypes(compact.graph) == {tf.bfloat16}
  assert _reductions_dtypes(full.graph) == {tf.float32}
  full_copies, _ = _train(use_fp16=True, compact_gradient_transfer=False)
  copies, _ = _train(use_fp16=True)
  # bfloat16 keeps ~3 significant digits of each gradient.
  _assert_trains_like(full_copies, copies, rtol=2e-2, atol=1e-5)


def test_relaxed_consistency_applies_the_previous_steps_gradients():
  built = _build(variable_consistency='relaxed')
  with built.graph.as_default():
    held = [v for v in tf1.local_variables() if 'deferred_gradient' in v.name]
  assert len(held) == 3 * _num_gradients(built.graph)
  strong, strong_losses = _train(steps=4)
  relaxed, relaxed_losses = _train(steps=4, variable_consistency='relaxed')
  # Step 1 applies zeros, so step 2 sees the first weights again; then each
  # step applies its predecessor's gradients (synthetic data: every batch
  # is the same, so step 3 sees what strong step 2 saw).
  assert relaxed_losses[1] == relaxed_losses[0]
  assert relaxed_losses[2] == pytest.approx(strong_losses[1], rel=1e-6)
  assert relaxed_losses[3] != pytest.approx(strong_losses[2], rel=1e-6)
  for values in relaxed.values():
    for value in values[1:]:
      np.testing.assert_array_equal(values[0], value)
