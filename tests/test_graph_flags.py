"""The original's graph, optimizer and debugging flags change what they say."""

import collections
import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from tests.driver_helpers import REPO, build_graph as _build, run_cli, run_quietly
from models import registry
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.engine_graph import model_graph
from tf_cnn_benchmarks.training import towers
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.run import timing

tf1 = tf.compat.v1




def _op_types(graph):
  return [op.type for op in graph.get_operations()]


def test_resnet_base_lr_scales_with_the_global_batch():
  def initial_rate(**flag_values):
    return run_config.resolve(flags.make_params(
        device='cpu', batch_size=512, **flag_values)).initial_learning_rate
  resnet = registry.get_model('resnet50', 'imagenet')
  assert initial_rate(model='resnet50', resnet_base_lr=0.2) == \
      pytest.approx(0.4)
  assert initial_rate(model='resnet50') == resnet.default_learning_rate
  # Only the ImageNet ResNets had the original's base rate.
  vgg = registry.get_model('vgg16', 'imagenet')
  assert initial_rate(model='vgg16', resnet_base_lr=0.2) == (
      vgg.default_learning_rate)
  # --init_learning_rate, then a piecewise schedule's first rate, win.
  assert initial_rate(model='resnet50', resnet_base_lr=0.2,
                      init_learning_rate=0.01) == 0.01
  assert initial_rate(model='resnet50', piecewise_learning_rate_schedule=(
      '0.3;1;0.03')) == 0.3


def test_single_l2_loss_op_same_value_one_op():
  losses, counts = [], []
  for single in (False, True):
    _, _, built = _build(model='trivial', single_l2_loss_op=single)
    counts.append(_op_types(built.graph).count('L2Loss'))
    with tf1.Session(graph=built.graph) as sess:
      sess.run(built.init_ops)
      sess.run(built.input_init_ops)
      losses.append(sess.run(built.total_loss))
  assert counts[0] > 1 and counts[1] == 1
  assert losses[0] == pytest.approx(losses[1], rel=1e-5)


def test_compute_lr_on_cpu_places_the_schedule_on_the_cpu():
  devices = {}
  for on_cpu in (False, True):
    _, _, built = _build(model='trivial', compute_lr_on_cpu=on_cpu,
                         num_learning_rate_warmup_epochs=1)
    devices[on_cpu] = built.learning_rate.op.device
  assert 'CPU:0' in devices[True]
  assert devices[False] != devices[True]


def test_sparse_to_dense_grads_densifies_indexed_slices():
  with tf.Graph().as_default():
    table = tf1.get_variable('table', [10, 4])
    loss = tf.reduce_sum(tf.gather(table, [1, 3]))
    (grad,) = tf.gradients(loss, [table])
    assert isinstance(grad, tf.IndexedSlices)
    (dense,) = towers.densify([grad])
    assert isinstance(dense, tf.Tensor)
    assert dense.shape.as_list() == [10, 4]


def test_enable_optimizations_false_turns_grappler_off():
  p = flags.make_params(device='cpu')
  on = run_config.session_config(p, run_config.resolve(p))
  assert not on.graph_options.rewrite_options.disable_meta_optimizer
  p = p.replace(enable_optimizations=False)
  off = run_config.session_config(p, run_config.resolve(p))
  assert off.graph_options.rewrite_options.disable_meta_optimizer
  assert off.graph_options.optimizer_options.opt_level == (
      tf1.OptimizerOptions.L0)


def test_rewriter_config_is_merged_into_the_session_config():
  p = flags.make_params(device='cpu', rewriter_config='constant_folding: OFF '
                        'layout_optimizer: OFF')
  options = run_config.session_config(
      p, run_config.resolve(p)).graph_options.rewrite_options
  assert options.constant_folding == options.OFF
  assert options.layout_optimizer == options.OFF


def test_bad_rewriter_config_is_a_one_paragraph_usage_error():
  out = run_cli('--device=cpu', '--rewriter_config=no_such_field: 1')
  assert out.returncode == 2, out.stderr
  message = out.stderr.strip()
  assert message.startswith('Error: --rewriter_config=')
  assert 'no_such_field' in message and '\n' not in message


def _graph_file_op_types(path):
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  graph_def = text_format.Parse(open(path).read(), tf1.GraphDef())
  return [node.op for node in graph_def.node]


def test_freeze_when_forward_only_leaves_no_variable_reads(tmp_path):
  reads = ('ReadVariableOp', 'VarHandleOp', 'VariableV2')
  types = {}
  for freeze in (False, True):
    path = str(tmp_path / ('graph_%s.pbtxt' % freeze))
    result, text = run_quietly(model='trivial', forward_only=True,
                               freeze_when_forward_only=freeze,
                               graph_file=path)
    assert result.status == 'ok', text
    types[freeze] = _graph_file_op_types(path)
  assert any(t in reads for t in types[False])
  assert not [t for t in types[True] if t in reads]
  assert 'Const' in types[True]


def test_freeze_needs_forward_only():
  with pytest.raises(flags.UsageError, match='add --forward_only'):
    flags.make_params(freeze_when_forward_only=True)


def test_backbone_model_path_restores_matching_weights(tmp_path):
  trained = tmp_path / 'trained'
  result, text = run_quietly(model='trivial', train_dir=str(trained),
                             num_batches=5, init_learning_rate=0.5)
  assert result.status == 'ok', text
  fresh, _ = run_quietly(model='trivial', num_batches=1)
  restored, text = run_quietly(model='trivial', num_batches=1,
                               backbone_model_path=str(trained))
  assert restored.status == 'ok', text
  assert 'Restored 6 of 6 model weights from backbone' in text
  # Started from the trained weights: not the fresh run's first loss.
  assert restored.times.losses[0] != pytest.approx(fresh.times.losses[0])


def test_backbone_without_matching_weights_fails_clearly(tmp_path):
  other = str(tmp_path / 'other.ckpt')
  with tf.Graph().as_default():
    tf1.get_variable('unrelated/weights', [3])
    with tf1.Session() as sess:
      sess.run(tf1.global_variables_initializer())
      tf1.train.Saver().save(sess, other)
  result, text = run_quietly(model='trivial', backbone_model_path=other)
  assert result.status == 'failed'
  assert 'has none of the' in result.failure['message']


def test_partitioned_graph_file_prefix_writes_one_graph_per_device(tmp_path):
  prefix = str(tmp_path / 'part.pbtxt')
  result, text = run_quietly(model='trivial', num_gpus=2,
                             variable_update='replicated',
                             partitioned_graph_file_prefix=prefix)
  assert result.status == 'ok', text
  names = sorted(os.listdir(tmp_path))
  assert names == ['part_job_localhost_replica_0_task_0_device_CPU_0.pbtxt',
                   'part_job_localhost_replica_0_task_0_device_CPU_1.pbtxt']
  assert _graph_file_op_types(str(tmp_path / names[1]))


def test_display_perf_ewma_weights_recent_steps():
  times = timing.StepTimes(10)
  for t in (1.0, 1.0, 2.0):
    times.add(t)
  assert times.mean_speed() == pytest.approx(7.5)
  assert times.ewma_speed(1.0) == pytest.approx(5.0)  # the last step alone
  # weights 0.25, 0.5, 1 -> mean time (0.25 + 0.5 + 2) / 1.75
  assert times.ewma_speed(0.5) == pytest.approx(10 / (2.75 / 1.75))
  result, text = run_quietly(model='trivial', display_perf_ewma=1.0)
  row = [l for l in text.splitlines() if l.startswith('3\timages/sec: ')][0]
  shown = float(row.split('images/sec: ')[1].split()[0])
  assert shown == pytest.approx(32 / result.times.timed[-1], abs=0.06)


def test_benchmark_test_id_is_in_the_run_record(tmp_path):
  result, _ = run_quietly(model='trivial', result_dir=str(tmp_path),
                          benchmark_test_id='trivial-bs32')
  assert result.record['benchmark_test_id'] == 'trivial-bs32'
  saved = json.load(open(result.record_path))
  assert saved['benchmark_test_id'] == 'trivial-bs32'


def test_use_chrome_trace_format_false_writes_step_stats(tmp_path):
  chrome, raw = tmp_path / 'chrome.json', tmp_path / 'raw.txt'
  run_quietly(model='trivial', trace_file=str(chrome))
  run_quietly(model='trivial', trace_file=str(raw),
              use_chrome_trace_format=False)
  assert 'traceEvents' in json.loads(chrome.read_text())
  from tensorflow.core.framework import step_stats_pb2  # pylint: disable=g-import-not-at-top
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  stats = text_format.Parse(raw.read_text(), step_stats_pb2.StepStats())
  assert stats.dev_stats and stats.dev_stats[0].node_stats


def test_use_tf_layers_either_value_builds_the_same_graph():
  graphs = [_build(model='trivial', use_tf_layers=v)[2].graph
            for v in (True, False)]
  assert _op_types(graphs[0]) == _op_types(graphs[1])
  assert 'both values build the same graph' in flags.SPECS_BY_NAME[
      'use_tf_layers'].help


def test_tfprof_file_is_a_profile_of_one_step(tmp_path):
  path = tmp_path / 'profile'
  result, text = run_quietly(model='trivial', tfprof_file=str(path))
  assert result.status == 'ok', text
  from tensorflow.core.profiler import tfprof_log_pb2  # pylint: disable=g-import-not-at-top
  profile = tfprof_log_pb2.ProfileProto.FromString(path.read_bytes())
  assert profile.nodes and list(profile.steps) == [0]
  assert any(n.name.endswith('MatMul') for n in profile.nodes.values())
  assert len(result.times.timed) == 3  # the profiled step is not timed
  # The table is each op type's own time in the profile, slowest first. (It
  # once printed only the first op type, with the whole step's time: tfprof
  # hands the list back as a chain.)
  own = collections.Counter()
  for node in profile.nodes.values():
    for step in node.execs.values():
      for times in list(step.cpu_execs.values()) + list(
          step.accelerator_execs.values()):
        own[node.op] += sum(t.int64_values[1] for t in times.times)
  table = text.split('Top ops by time (op type, total time, count):\n')[1]
  rows = [line.split() for line in table.splitlines()
          if line.startswith('  ')]
  assert len(rows) >= 5 and 'MatMul' in [r[0] for r in rows], text
  micros = [round(float(r[1]) * 1000) for r in rows]
  assert micros == [own[r[0]] for r in rows], (own, text)
  assert micros == sorted(micros, reverse=True), text


def test_benchmark_log_dir_writes_the_official_logger_files(tmp_path):
  log_dir = tmp_path / 'log'
  result, text = run_quietly(model='trivial', benchmark_log_dir=str(log_dir),
                             benchmark_test_id='t-1', num_batches=4,
                             display_every=2)
  assert result.status == 'ok', text
  (info,) = [json.loads(l) for l in
             (log_dir / 'benchmark_run.log').read_text().splitlines()]
  assert info['model_name'] == 'trivial' and info['test_id'] == 't-1'
  assert info['dataset'] == {'name': 'imagenet'}
  assert info['tensorflow_version']['version'] == tf.version.VERSION
  parameters = {p['name']: p for p in info['run_parameters']}
  assert parameters['batch_size'] == {'name': 'batch_size', 'long_value': 32}
  metrics = [json.loads(l) for l in
             (log_dir / 'metric.log').read_text().splitlines()]
  assert [(m['name'], m['global_step']) for m in metrics] == [
      ('current_examples_per_sec', 1), ('current_examples_per_sec', 2),
      ('current_examples_per_sec', 4), ('average_examples_per_sec', 4)]
  assert set(metrics[0]) == {'name', 'value', 'unit', 'global_step',
                             'timestamp', 'extras'}
  assert metrics[-1]['value'] == pytest.approx(result.images_per_sec)


_PROBE = r'''
import os, sys
from tf_cnn_benchmarks import benchmark_main
from tf_cnn_benchmarks.process import logs
def probe(verbosity):
  print({k: os.environ.get(k) for k in ('KMP_BLOCKTIME', 'KMP_AFFINITY',
                                        'KMP_SETTINGS')})
  print('tensorflow' in sys.modules)
  sys.exit(0)
logs.import_tensorflow_quietly = probe
benchmark_main.main(['tf_cnn_benchmarks'] + sys.argv[1:])
'''


def test_kmp_flags_set_the_environment_before_tensorflow_loads():
  env = {k: v for k, v in os.environ.items() if not k.startswith('KMP_')}
  env['KMP_SETTINGS'] = '0'  # exported by the user: kept at the default
  out = subprocess.run(
      [sys.executable, '-c', _PROBE, '--kmp_blocktime=7',
       '--kmp_affinity=none'], cwd=REPO, env=env, capture_output=True,
      text=True, timeout=120)
  assert out.returncode == 0, out.stderr
  environ, tf_loaded = out.stdout.splitlines()
  assert eval(environ) == {'KMP_BLOCKTIME': '7', 'KMP_AFFINITY': 'none',  # pylint: disable=eval-used
                           'KMP_SETTINGS': '0'}
  assert tf_loaded == 'False'
