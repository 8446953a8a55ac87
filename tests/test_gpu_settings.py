"""The GPU runtime flags reach TensorFlow as the original passed them: the
graph engine's session ConfigProto, the TF_* variables set before
TensorFlow loads (both engines), tf.config's memory growth (tf2 engine),
the run record; and on this machine, without a GPU, the run goes on and
says once which settings had nothing to act on."""

import io
import json
import os

import pytest
import tensorflow as tf

from tests.driver_helpers import run_cli
from tf_cnn_benchmarks import benchmark_main
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.config import gpu_settings
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.engine_graph import engine as graph_engine
from tf_cnn_benchmarks.engine_tf2 import strategies
from tf_cnn_benchmarks.process import gpu_env
from tf_cnn_benchmarks.process import logs
from tf_cnn_benchmarks.run import local_runtime
from tf_cnn_benchmarks.run import report

# Every ConfigProto flag given a value that changes its field.
CONFIG_PROTO_FLAGS = dict(
    allow_growth=True, gpu_memory_frac_for_testing=0.4,
    force_gpu_compatible=True, use_unified_memory=True,
    timestamped_allocator=True, gpu_kt_max_interval=3, gpu_kt_max_bytes=4,
    gpu_kt_max_pending=5, gpu_indices='1,0', use_numa_affinity=True)
EXPECTED_FIELDS = {
    'gpu_options.allow_growth': True,
    'gpu_options.per_process_gpu_memory_fraction': 0.4,
    'gpu_options.force_gpu_compatible': True,
    'gpu_options.experimental.use_unified_memory': True,
    'gpu_options.experimental.timestamped_allocator': True,
    'gpu_options.experimental.kernel_tracker_max_interval': 3,
    'gpu_options.experimental.kernel_tracker_max_bytes': 4,
    'gpu_options.experimental.kernel_tracker_max_pending': 5,
    'gpu_options.experimental.collective_ring_order': '1,0',
    'experimental.use_numa_affinity': True,
}
ENV_FLAGS = ('--winograd_nonfused=false', '--batchnorm_persistent=false',
             '--autotune_threshold=2', '--gpu_thread_mode=gpu_shared',
             '--per_gpu_thread_count=3', '--num_gpus=2')
EXPECTED_ENV = {
    'TF_ENABLE_WINOGRAD_NONFUSED': None,
    'TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT': None,
    'TF_AUTOTUNE_THRESHOLD': '2',
    'TF_SYNC_ON_FINISH': '0',
    'TF_GPU_THREAD_MODE': 'gpu_shared',
    'TF_GPU_THREAD_COUNT': '6',  # 3 per GPU, one pool for both
}
# Per engine: what it runs besides (tf2: the two towers' strategy; the
# graph engine's session alone reads TF_SYNC_ON_FINISH).
ENGINE_FLAGS = {'graph': ('--sync_on_finish',),
                'tf2': ('--variable_update=replicated',)}
ENGINE_ENV = {'graph': {'TF_SYNC_ON_FINISH': '1'}, 'tf2': {}}


def _field(config, path):
  value = config
  for name in path.split('.'):
    value = getattr(value, name)
  return value


class _CapturingRuntime(local_runtime.LocalRuntime):
  """The single-process runtime, keeping the ConfigProto of its session."""

  config = None

  def open_session(self, graph, config):
    _CapturingRuntime.config = config
    return super().open_session(graph, config)


def test_graph_engine_session_gets_every_config_proto_field(tmp_path):
  params = flags.make_params(
      model='trivial', device='cpu', num_gpus=2, num_batches=1,
      num_warmup_batches=0, result_dir=str(tmp_path), **CONFIG_PROTO_FLAGS)
  out = io.StringIO()
  result = graph_engine.run(params, reporter=report.Reporter(out),
                            runtime=_CapturingRuntime())
  assert result.status == 'ok', out.getvalue()
  config = _CapturingRuntime.config
  for path, value in EXPECTED_FIELDS.items():
    assert _field(config, path) == pytest.approx(value), path
  # Towers on this CPU, as without the GPU flags.
  assert config.device_count['CPU'] == 2
  text = out.getvalue()
  # No GPU here: the run went on and said so, once, naming the GPU-only
  # flags given (not the host's NUMA setting).
  notes = [l for l in text.splitlines() if 'nothing to act on' in l]
  assert len(notes) == 1, text
  assert '--allow_growth' in notes[0] and '--gpu_kt_max_pending' in notes[0]
  assert '--use_numa_affinity' not in notes[0]
  assert 'NUMA bind:   True' in text
  settings = result.record['config']['gpu_settings']
  assert settings['config_proto'] == pytest.approx(EXPECTED_FIELDS)
  assert settings['gpus_visible'] is False
  assert settings['memory_growth'] is True
  assert 'allow_growth' in settings['idle_flags']


def test_config_proto_is_untouched_at_the_defaults():
  params = flags.make_params(model='trivial', device='cpu', result_dir='')
  config = run_config.session_config(params, run_config.resolve(params))
  assert not config.HasField('gpu_options')
  assert not config.experimental.use_numa_affinity


def _environment_before_tensorflow(monkeypatch, argv):
  """The GPU variables as they are when benchmark_main loads TensorFlow
  (it is stopped right there)."""
  for name in EXPECTED_ENV:
    monkeypatch.delenv(name, raising=False)  # restored after the test
  seen = {}

  def load_tensorflow(verbosity):
    del verbosity
    seen.update({name: os.environ.get(name) for name in EXPECTED_ENV})
    return False
  monkeypatch.setattr(logs, 'load_tensorflow', load_tensorflow)
  assert benchmark_main.main(['x', '--result_dir='] + list(argv)) == (
      exit_codes.RUN_FAILED)
  return seen


@pytest.mark.parametrize('engine', ['graph', 'tf2'])
def test_variables_are_set_before_tensorflow_loads(monkeypatch, engine):
  argv = list(ENV_FLAGS + ENGINE_FLAGS[engine]) + ['--engine=' + engine]
  assert _environment_before_tensorflow(monkeypatch, argv) == dict(
      EXPECTED_ENV, **ENGINE_ENV[engine])


def test_default_variables_are_the_originals_and_keep_the_users(monkeypatch):
  monkeypatch.setenv('TF_ENABLE_WINOGRAD_NONFUSED', '0')
  environ = {'TF_ENABLE_WINOGRAD_NONFUSED': '0'}
  gpu_env.apply(flags.make_params(), environ)
  # --device=gpu (the default) sets the thread mode, as the original did.
  assert environ == {'TF_ENABLE_WINOGRAD_NONFUSED': '0',
                     'TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT': '1',
                     'TF_SYNC_ON_FINISH': '0',
                     'TF_GPU_THREAD_MODE': 'gpu_private',
                     'TF_GPU_THREAD_COUNT': '2'}
  # A flag given wins over the exported value; --device=cpu sets no GPU
  # threads; a global pool has no count.
  environ = {'TF_ENABLE_WINOGRAD_NONFUSED': '0'}
  gpu_env.apply(flags.make_params(winograd_nonfused=False, device='cpu'),
                environ)
  assert 'TF_ENABLE_WINOGRAD_NONFUSED' not in environ
  assert 'TF_GPU_THREAD_MODE' not in environ
  environ = {}
  gpu_env.apply(flags.make_params(gpu_thread_mode='global'), environ)
  assert environ['TF_GPU_THREAD_MODE'] == 'global'
  assert 'TF_GPU_THREAD_COUNT' not in environ


@pytest.mark.slow
@pytest.mark.parametrize('engine', ['graph', 'tf2'])
def test_a_run_has_the_variables_and_records_them(tmp_path, engine):
  """A real run of either engine, in its own process: the variables are in
  its environment when the record is written (the record reads them from
  there)."""
  env = {k: v for k, v in os.environ.items() if k not in EXPECTED_ENV}
  out = run_cli('--model=trivial', '--device=cpu', '--num_batches=1',
                '--num_warmup_batches=0', '--engine=' + engine,
                '--result_dir=%s' % tmp_path, *ENV_FLAGS,
                *ENGINE_FLAGS[engine], env=env)
  assert out.returncode == 0, out.stdout + out.stderr
  (name,) = os.listdir(tmp_path)
  record = json.loads((tmp_path / name).read_text())
  settings = record['config']['gpu_settings']
  # --device=cpu: the original set no GPU thread variables then.
  expected = {k: v for k, v in dict(EXPECTED_ENV,
                                    **ENGINE_ENV[engine]).items()
              if not k.startswith('TF_GPU_THREAD')}
  assert settings['environment'] == expected
  assert 'nothing to act on' in out.stdout
  assert record['config']['engine'] == engine


class _FakeGpus:
  def __init__(self, monkeypatch, count=2):
    self.devices = [tf.config.PhysicalDevice('/physical_device:GPU:%d' % i,
                                             'GPU') for i in range(count)]
    self.growth = {}
    real = tf.config.list_physical_devices
    monkeypatch.setattr(
        tf.config, 'list_physical_devices',
        lambda kind=None: self.devices if kind == 'GPU' else real(kind))
    monkeypatch.setattr(tf.config.experimental, 'set_memory_growth',
                        lambda d, on: self.growth.__setitem__(d.name, on))


@pytest.mark.parametrize('given', [True, False])
def test_tf2_engine_sets_memory_growth_on_every_gpu(monkeypatch, given):
  gpus = _FakeGpus(monkeypatch)
  strategies.prepare_runtime(flags.make_params(allow_growth=given,
                                               engine='tf2'))
  assert gpus.growth == {d.name: given for d in gpus.devices}


def test_tf2_engine_leaves_memory_growth_alone_by_default(monkeypatch):
  gpus = _FakeGpus(monkeypatch)
  strategies.prepare_runtime(flags.make_params(engine='tf2'))
  assert gpus.growth == {}


@pytest.mark.parametrize('name', ['gpu_memory_frac_for_testing',
                                  'use_unified_memory', 'sync_on_finish',
                                  'gpu_indices'])
def test_tf2_engine_names_the_graph_engine_for_session_only_settings(name):
  value = {'gpu_memory_frac_for_testing': 0.5, 'gpu_indices': '0'}.get(
      name, True)
  with pytest.raises(flags.UsageError) as e:
    flags.make_params(engine='tf2', **{name: value})
  assert '--engine=graph' in str(e.value) and '--' + name in str(e.value)


def test_on_a_gpu_the_thread_pools_make_room_as_the_originals(monkeypatch):
  monkeypatch.setattr(run_config, 'gpus_available', lambda: True)
  monkeypatch.setattr(os, 'cpu_count', lambda: 16)
  rc = run_config.resolve(flags.make_params(num_gpus=2, result_dir=''))
  assert rc.device_type == 'gpu' and rc.tower_devices == ['/gpu:0', '/gpu:1']
  # 2 threads per GPU; the input pipeline leaves 2 more per GPU.
  assert rc.params.num_inter_threads == 12
  assert rc.params.datasets_num_private_threads == 8
  config = run_config.session_config(rc.params, rc)
  assert config.intra_op_parallelism_threads == 1
  assert config.inter_op_parallelism_threads == 12
  assert not any('nothing to act on' in n for n in rc.notes)
  # Sizes the user gave are kept.
  rc = run_config.resolve(flags.make_params(
      num_gpus=2, num_inter_threads=3, datasets_num_private_threads=5,
      num_intra_threads=4, result_dir=''))
  assert (rc.params.num_inter_threads,
          rc.params.datasets_num_private_threads) == (3, 5)
  assert run_config.session_config(
      rc.params, rc).intra_op_parallelism_threads == 4


def test_without_a_gpu_the_cpu_threads_are_untouched():
  rc = run_config.resolve(flags.make_params(num_gpus=2, result_dir=''))
  assert rc.device_type == 'cpu'
  assert rc.params.num_inter_threads == 0
  assert rc.params.datasets_num_private_threads is None


def test_autotune_threshold_lengthens_the_default_warm_up():
  resolve = lambda **kw: run_config.resolve(flags.make_params(
      device='cpu', result_dir='', **kw))
  assert resolve().num_warmup_batches == 10
  assert resolve(autotune_threshold=2).num_warmup_batches == 20
  assert resolve(autotune_threshold=2,
                 num_warmup_batches=3).num_warmup_batches == 3


@pytest.mark.parametrize('settings, phrase', [
    (dict(gpu_thread_mode='global', per_gpu_thread_count=2),
     '--gpu_thread_mode=global'),
    (dict(gpu_indices='0,2', num_gpus=2), 'in ring order, each once'),
    (dict(gpu_indices='a,b', num_gpus=2), 'e.g. --gpu_indices=1,0'),
])
def test_bad_gpu_flags_are_usage_errors(settings, phrase):
  with pytest.raises(flags.UsageError) as e:
    flags.make_params(**settings)
  assert phrase in str(e.value)


def test_idle_note_names_only_changed_gpu_flags():
  params = flags.make_params(allow_growth=False, sync_on_finish=True)
  assert gpu_settings.idle(params, has_gpu=False) == ['allow_growth']
  assert gpu_settings.idle(params, has_gpu=True) == []
  assert gpu_settings.idle(flags.make_params(), has_gpu=False) == []


def test_gpu_indices_order_the_towers_around_xrings_ring():
  """Piece c of a gradient is summed around the ring ending on the c-th
  tower of --gpu_indices' order, and every tower still gets the mean."""
  from tf_cnn_benchmarks.variable_update import all_reduce  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.variable_update import all_reduce_spec  # pylint: disable=g-import-not-at-top
  assert all_reduce.options_from(flags.make_params(
      num_gpus=3, gpu_indices='2,0,1', variable_update='replicated'),
                                 tf.float32).ring_order == (2, 0, 1)
  devices = ['/cpu:0', '/cpu:1', '/cpu:2']
  values = [[1., 2., 3.], [10., 20., 30.], [100., 200., 300.]]
  for order in ((), (2, 0, 1)):
    graph = tf.Graph()
    with graph.as_default():
      tensors = []
      for device, value in zip(devices, values):
        with tf.compat.v1.device(device):
          tensors.append(tf.constant(value))
      opts = all_reduce.Options(
          ranges=all_reduce_spec.parse('xring'), ring_order=order)
      means = [m for (m,) in all_reduce.batch_mean(
          [[t] for t in tensors], devices, opts)]
      finals = [op for op in graph.get_operations() if op.type == 'Mul']
      # One mean per piece, on the tower the ring ends on.
      assert [tf.DeviceSpec.from_string(op.device).device_index
              for op in finals] == list(order or (0, 1, 2))
      config = tf.compat.v1.ConfigProto(device_count={'CPU': 3})
      with tf.compat.v1.Session(graph=graph, config=config) as sess:
        for mean in sess.run(means):
          assert mean.tolist() == pytest.approx([37., 74., 111.])


def test_readme_on_gpus_names_every_gpu_flag():
  readme = open(os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), 'README.md')).read()
  section = readme[readme.index('### On GPUs'):]
  section = section[:section.index('\n## ')]
  for name in gpu_settings.GPU_ONLY_FLAGS + (
      'sync_on_finish', 'use_numa_affinity', 'hierarchical_copy',
      'network_topology', 'fp16_dtype', 'fp16_loss_scale',
      'fp16_enable_auto_loss_scale', 'fp16_inc_loss_scale_every_n',
      'fp16_vars'):
    assert '`--%s' % name in section, name
  assert '**Never run on a GPU in this project\'s tests**' in section
