"""--engine=tf2: which runs it takes, its report and record, and that it
trains exactly what the graph engine trains."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests import driver_helpers
from tf_cnn_benchmarks.config import flags

ROOT = driver_helpers.REPO


def parse(*args):
  return flags.parse_command_line(['tf_cnn_benchmarks'] + list(args))[0]


@pytest.mark.parametrize('args, phrase', [
    (['--train_dir=/tmp/x'], '--train_dir (checkpoints) is not implemented'),
    (['--forward_only'], '--forward_only'),
    (['--batch_group_size=2'], '--batch_group_size'),
    (['--num_gpus=2'], '--variable_update=parameter_server over several'),
    (['--num_gpus=2', '--variable_update=independent'],
     '--variable_update=independent over several'),
    (['--optimizer=adam'], '--optimizer=adam is not implemented'),
    (['--num_gpus=2', '--variable_update=replicated', '--xla_compile'],
     'one device of a single process only'),
    (['--job_name=worker', '--worker_hosts=a:1,b:2', '--ps_hosts=c:3',
      '--variable_update=distributed_replicated'],
     '--variable_update=distributed_replicated has no tf.distribute '
     'equivalent'),
    (['--job_name=worker', '--worker_hosts=a:1,b:2', '--num_gpus=2',
      '--variable_update=collective_all_reduce'], 'one replica per cluster '
     'worker'),
    (['--job_name=worker', '--worker_hosts=a:1,b:2', '--xla_compile',
      '--variable_update=collective_all_reduce'], 'a single process only'),
    (['--job_name=worker', '--worker_hosts=a:1,b:2', '--ps_hosts=c:3',
      '--variable_update=parameter_server'], 'True synchronous SGD'),
])
def test_tf2_refuses_what_has_no_tf2_equivalent_naming_the_graph_engine(
    args, phrase):
  with pytest.raises(flags.UsageError) as e:
    parse('--engine=tf2', *args)
  assert phrase in str(e.value) and '--engine=graph' in str(e.value), str(
      e.value)
  # The same flags are fine on the graph engine (the default).
  assert parse(*args).engine == 'graph'


def test_tf2_cluster_tasks_of_the_all_reduce_modes_have_no_controller():
  """Both all-reduce modes are MultiWorkerMirroredStrategy under tf2:
  every worker trains, and a controller is refused (the graph engine's
  distributed_all_reduce needs one)."""
  from tf_cnn_benchmarks.cluster import roles  # pylint: disable=g-import-not-at-top
  for mode in ('collective_all_reduce', 'distributed_all_reduce'):
    role = roles.resolve_role(parse(
        '--engine=tf2', '--variable_update=' + mode, '--job_name=worker',
        '--task_index=1', '--worker_hosts=a:1,b:2'))
    assert role.trains and not role.in_graph and not role.is_chief
  with pytest.raises(flags.UsageError, match='with the graph engine'):
    roles.resolve_role(parse(
        '--engine=tf2', '--variable_update=distributed_all_reduce',
        '--job_name=controller', '--worker_hosts=a:1,b:2',
        '--controller_host=c:3'))
  with pytest.raises(flags.UsageError, match='give --controller_host'):
    roles.resolve_role(parse(
        '--variable_update=distributed_all_reduce', '--job_name=worker',
        '--worker_hosts=a:1,b:2'))


def test_tf2_parameter_server_is_coordinated_by_the_controller():
  """ParameterServerStrategy: the controller task is its coordinator (the
  one that trains, TensorFlow's "chief"); workers and ps tasks serve."""
  from tf_cnn_benchmarks.cluster import roles  # pylint: disable=g-import-not-at-top
  cluster = ('--engine=tf2', '--variable_update=parameter_server',
             '--cross_replica_sync=False', '--worker_hosts=a:1,b:2',
             '--ps_hosts=c:3', '--controller_host=d:4')
  controller = roles.resolve_role(parse(*cluster, '--job_name=controller'))
  assert controller.trains and controller.is_chief
  assert controller.serving_tasks() == [('ps', 0), ('worker', 0),
                                        ('worker', 1)]
  assert controller.tf_cluster_def() == {
      'ps': ['c:3'], 'worker': ['a:1', 'b:2'], 'chief': ['d:4']}
  worker = roles.resolve_role(parse(*cluster, '--job_name=worker',
                                    '--task_index=1'))
  assert not worker.trains and controller.can_train_without('worker1')
  assert not controller.can_train_without('ps0')
  # The coordinator runs a lost worker's steps on the others, so waiting
  # for each round (--sync_updates=barrier) needs no given worker either:
  # the watchdog and the launcher carry on without one.
  barrier = roles.resolve_role(parse(
      *[f for f in cluster if f != '--cross_replica_sync=False'],
      '--sync_updates=barrier', '--job_name=controller'))
  assert barrier.cross_replica_sync and not barrier.lockstep
  assert barrier.can_train_without('worker1')
  assert not barrier.can_train_without('ps0')
  with pytest.raises(flags.UsageError, match="ParameterServerStrategy's "
                     'coordinator'):
    roles.resolve_role(parse(*cluster[:-1], '--job_name=worker'))


@pytest.mark.parametrize('cluster', [
    ('--variable_update=collective_all_reduce', '--job_name=worker',
     '--worker_hosts=a:1,b:2'),
    ('--variable_update=parameter_server', '--cross_replica_sync=False',
     '--job_name=controller', '--worker_hosts=a:1', '--ps_hosts=c:3',
     '--controller_host=d:4'),
])
def test_tf2_cluster_tasks_need_the_tensorflow_their_runtime_uses(
    monkeypatch, capsys, cluster):
  """The floor (flag_checks.TF2_CLUSTER_MIN_TF), on a faked installed
  version: a tf2 cluster task on an older TensorFlow is a usage error
  naming both versions and the graph engine, and the launcher stops with
  it before starting a task; a single tf2 process, the graph engine's
  cluster, the floor itself and an unknown build are let through."""
  from tf_cnn_benchmarks import exit_codes  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.config import flag_checks  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster.launch import launcher  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.measure import versions  # pylint: disable=g-import-not-at-top
  assert flag_checks.TF2_CLUSTER_MIN_TF == '2.19'
  monkeypatch.setattr(versions, 'tf_installed_version', lambda: '2.18.1')
  with pytest.raises(flags.UsageError) as e:
    parse('--engine=tf2', *cluster)
  assert ('needs TensorFlow >= 2.19' in str(e.value) and
          'this is TensorFlow 2.18.1' in str(e.value) and
          '--engine=graph' in str(e.value)), str(e.value)
  assert parse(*cluster).engine == 'graph'
  assert parse('--engine=tf2').engine == 'tf2'
  code = launcher.main(['launch', '--ps', '1', '--workers', '2', '--',
                        '--engine=tf2', '--variable_update=parameter_server',
                        '--cross_replica_sync=False'])
  err = capsys.readouterr().err
  assert code == exit_codes.USAGE and 'needs TensorFlow >= 2.19' in err, err
  for allowed in ('2.19.0', None):
    monkeypatch.setattr(versions, 'tf_installed_version', lambda: allowed)
    assert parse('--engine=tf2', *cluster).engine == 'tf2'


def test_tf2_takes_the_flags_both_engines_share():
  p = parse('--engine=tf2', '--num_gpus=2', '--variable_update=replicated',
            '--optimizer=momentum', '--use_fp16', '--weight_decay=1e-4',
            '--num_epochs_per_decay=1', '--learning_rate_decay_factor=0.5')
  assert p.engine == 'tf2'
  assert parse('--engine=tf2').variable_update == 'parameter_server'


@pytest.mark.timeout(300)
def test_tf2_cli_prints_the_familiar_report_and_records_the_engine(tmp_path):
  done = driver_helpers.run_cli(
      '--engine=tf2', '--model=trivial', '--device=cpu', '--batch_size=4',
      '--num_batches=4', '--num_warmup_batches=1', '--display_every=2',
      '--peak_gflops=100', '--result_dir=%s' % tmp_path)
  out = done.stdout
  assert done.returncode == 0, out + done.stderr
  assert 'tf2 engine: tf.function, default strategy' in out
  assert 'Step\tImg/sec\ttotal_loss' in out
  steps = re.findall(r'^(\d+)\timages/sec: [\d.]+ \+/- [\d.]+ \(jitter = '
                     r'[\d.]+\)\t[\d.]+$', out, re.M)
  assert steps == ['1', '2', '4'], out
  assert re.search(r'^total images/sec: [\d.]+$', out, re.M), out
  assert 'model FLOP utilisation: ' in out and 'GFLOP per image' in out
  [name] = os.listdir(tmp_path)
  with open(tmp_path / name) as f:
    record = json.load(f)
  assert record['status'] == 'ok'
  assert record['config']['engine'] == 'tf2'
  assert len(record['timing']['step_losses']) == 4
  assert record['summary']['gflops_per_image'] > 0


# An engine handed a cluster task's strategy, prepared after TensorFlow's
# runtime started (as the runtime's begin starts it) for a run of 3 towers
# (a coordinator's rc counts a tower per worker).
_CLUSTER_PREPARE_SCRIPT = r'''
import tensorflow as tf
from tf_cnn_benchmarks.config import flags, run_config
from tf_cnn_benchmarks.engine_tf2 import engine
tf.constant(0)  # the runtime starts
rc = run_config.resolve(flags.make_params(
    engine='tf2', device='cpu', num_gpus=3, variable_update='replicated'))
assert rc.num_towers == 3
engine.Tf2Engine(cluster_strategy=lambda: (None, 'a cluster\'s')).prepare(rc)
print('PREPARED', len(tf.config.list_logical_devices('CPU')))
'''


def test_tf2_engine_of_a_cluster_task_leaves_the_devices_alone():
  """A cluster task's runtime has started TensorFlow with its strategy by
  the time the driver prepares the engine: prepare makes no devices then
  (it could not: TensorFlow fixes them when it starts)."""
  done = subprocess.run([sys.executable, '-c', _CLUSTER_PREPARE_SCRIPT],
                        cwd=ROOT, capture_output=True, text=True,
                        timeout=120)
  assert done.returncode == 0, done.stdout + done.stderr
  assert 'PREPARED 1' in done.stdout, done.stdout


# Runs the graph and the tf2 engine on the same flags in one fresh process
# (two virtual CPUs made before TensorFlow starts) and prints each run's
# timed losses.
_EQUIVALENCE_SCRIPT = r'''
import io, json, sys
from tf_cnn_benchmarks.engine_tf2 import strategies
strategies.make_virtual_cpus(2)
from tf_cnn_benchmarks.run import report
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.engine_graph import engine as graph_engine
from tf_cnn_benchmarks.engine_tf2 import engine as tf2_engine
cases = json.loads(sys.argv[1])
losses = {}
for name, settings in cases.items():
  params = flags.make_params(**settings)
  run = (tf2_engine.run if settings.get('engine') == 'tf2'
         else graph_engine.run)
  result = run(params, reporter=report.Reporter(io.StringIO()))
  assert result.status == 'ok', (name, result.failure)
  losses[name] = [result.times.losses, result.utilisation.gflops_per_image]
print('LOSSES ' + json.dumps(losses))
'''


def _losses(cases):
  done = subprocess.run(
      [sys.executable, '-c', _EQUIVALENCE_SCRIPT, json.dumps(cases)],
      cwd=ROOT, capture_output=True, text=True, timeout=280)
  assert done.returncode == 0, done.stdout + done.stderr
  [line] = [l for l in done.stdout.splitlines() if l.startswith('LOSSES ')]
  return json.loads(line[len('LOSSES '):])


def _both_engines(**settings):
  common = dict(device='cpu', num_batches=4, num_warmup_batches=1,
                result_dir='', peak_gflops=100, display_every=1)
  common.update(settings)
  return {'graph': common, 'tf2': dict(common, engine='tf2')}


# Both engines run the same kernels on the same weights and batches; what
# may differ is the order of a few float32 sums (GradientTape vs
# tf.gradients adding a weight's two gradient terms, the strategy's
# all-reduce vs the graph's add_n). One rounding (~6e-8 relative) per
# reordered sum, carried through 5 updates, stays far below 1e-5; a wrong
# weight, batch, learning rate or a gradient not averaged moves the loss by
# 1e-3 or more from the first step.
_RTOL = 1e-5


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_tf2_loss_sequence_matches_the_graph_engine_one_device_and_mirrored():
  """One device (default strategy, momentum) vs the graph engine; 2
  replicas under MirroredStrategy vs --variable_update=replicated
  --num_gpus=2, through batch norm (resnet20: its moving averages are
  updated inside the step, from replica 0)."""
  cases = {}
  for name, settings in (
      ('lenet', dict(model='lenet', batch_size=4, optimizer='momentum')),
      ('resnet20x2', dict(model='resnet20', batch_size=2, num_gpus=2,
                          variable_update='replicated')),
  ):
    for engine, flags_ in _both_engines(**settings).items():
      cases['%s/%s' % (name, engine)] = flags_
  # Last: --xla_compile sets XLA's flags for the process it starts in.
  cases['lenet/tf2_jit'] = dict(cases['lenet/tf2'], xla_compile=True)
  losses = _losses(cases)
  for name in ('lenet', 'resnet20x2'):
    (graph, graph_gflops), (tf2, tf2_gflops) = (losses[name + '/graph'],
                                                losses[name + '/tf2'])
    assert len(graph) == len(tf2) == 4
    # Training moved: the sequence is not a constant both could match.
    assert len(set(graph)) > 1, graph
    np.testing.assert_allclose(tf2, graph, rtol=_RTOL, err_msg=name)
    # The MFU line counts the same work per image in both engines (not the
    # input images' gradient the tape builds and the runtime prunes).
    assert tf2_gflops == pytest.approx(graph_gflops, rel=1e-9), name
  # jit_compile=True: XLA fuses and reorders float32 arithmetic, so the
  # same training only agrees to ~1e-4 over a few steps (a wrong update
  # would be off by 1e-2 or more); the FLOPs are counted inside the
  # compiled function.
  (jit, jit_gflops), (graph, graph_gflops) = (losses['lenet/tf2_jit'],
                                              losses['lenet/graph'])
  np.testing.assert_allclose(jit, graph, rtol=1e-3)
  assert jit_gflops == pytest.approx(graph_gflops, rel=1e-9)


@pytest.mark.timeout(300)
def test_tf2_learns_real_tfrecords_fed_through_the_strategy(learnable_shards):
  """The real ImageNet pipeline through distribute_datasets_from_function:
  images and labels line up (the loss falls well below chance's)."""
  import io  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.run import report  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.engine_tf2 import engine  # pylint: disable=g-import-not-at-top
  out = io.StringIO()
  result = engine.run(flags.make_params(
      engine='tf2', model='lenet', device='cpu', data_dir=learnable_shards,
      batch_size=16, num_batches=60, num_warmup_batches=0, optimizer='sgd',
      init_learning_rate=0.01, result_dir='', display_every=20,
      peak_gflops=100), reporter=report.Reporter(out))
  assert result.status == 'ok', (result.failure, out.getvalue())
  assert 'Dataset:     imagenet\n' in out.getvalue()
  losses = result.times.losses
  # Guessing among the 3 classes scores ln 3 = 1.10 at best (the 1001-way
  # head starts near ln 1001 = 6.9); below that, the model tells the
  # images apart, so images and labels line up.
  assert np.mean(losses[-10:]) < 0.8, losses


def _in_a_fresh_process(script, *args):
  """Runs ``script`` (it prints one 'RESULT <json>' line) in a fresh
  process: its TensorFlow devices and XLA flags are its own."""
  done = subprocess.run([sys.executable, '-c', script] + list(args),
                        cwd=ROOT, capture_output=True, text=True, timeout=280)
  assert done.returncode == 0, done.stdout + done.stderr[-3000:]
  [line] = [l for l in done.stdout.splitlines() if l.startswith('RESULT ')]
  return json.loads(line[len('RESULT '):])


# Builds the tf2 step of one device with and without --xla_compile, traces
# it, and lists every function call in the traced graph (and the functions
# it calls) that carries XLA's must-compile attribute, jit_compile=True's
# mark.
_XLA_SCRIPT = r'''
import json
from tf_cnn_benchmarks.config import flags, run_config
from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.engine_tf2 import strategies, train_step
marked = {}
for xla in (False, True):
  params = flags.make_params(
      engine='tf2', model='trivial', data_name='cifar10', batch_size=2,
      device='cpu', xla_compile=xla, result_dir='', num_batches=1,
      num_warmup_batches=0)
  rc = run_config.resolve(params)
  rc, source = driver.open_input_source(params, rc)
  if not xla:
    strategies.prepare_devices(rc)
  trainer = train_step.Trainer(rc, strategies.choose(rc), source)
  graph = trainer._step.get_concrete_function(trainer._iterator).graph
  graph_def = graph.as_graph_def()
  nodes = list(graph_def.node) + [
      n for f in graph_def.library.function for n in f.node_def]
  marked[str(xla)] = sorted(
      n.op for n in nodes
      if n.attr['_XlaMustCompile'].b)
print('RESULT ' + json.dumps(marked))
'''


@pytest.mark.timeout(300)
def test_tf2_xla_compile_marks_the_traced_step_for_xla():
  """--xla_compile compiles the replica's step whole (jit_compile=True):
  the traced step calls it through a function call XLA must compile.
  Numbers cannot show it (the compiled step computes the same losses to
  ~1e-4); the traced graph can, and without the flag nothing is marked."""
  marked = _in_a_fresh_process(_XLA_SCRIPT)
  assert marked['False'] == [], marked
  assert marked['True'] == ['StatefulPartitionedCall'], marked


# A ParameterServerStrategy coordinator's Trainer (the controller task of 1
# ps and 2 workers, from real flags and a real cluster role), its steps
# scheduled on a recording stand-in for the ClusterCoordinator (a remote
# step runs on the default strategy when its loss is fetched). Prints, for
# each --sync_updates kind, the steps scheduled but not yet fetched when
# each loss is fetched.
_ROUNDS_SCRIPT = r'''
import json
import tensorflow as tf
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.config import flags, run_config
from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.engine_tf2 import strategies, train_step

class Coordinator:
  def __init__(self):
    self.in_flight, self.at_fetch = 0, []
  def create_per_worker_dataset(self, dataset_fn):
    return dataset_fn()
  def schedule(self, fn, args):
    self.in_flight += 1
    coordinator = self
    class Remote:
      def fetch(self):
        coordinator.at_fetch.append(coordinator.in_flight)
        coordinator.in_flight -= 1
        return fn(*args)
    return Remote()

in_flight = {}
for sync in ('--sync_updates=barrier', '--cross_replica_sync=False'):
  params = flags.parse_command_line([
      'tf_cnn_benchmarks', '--engine=tf2', '--variable_update=parameter_server',
      '--model=trivial', '--data_name=cifar10', '--batch_size=2',
      '--device=cpu', '--num_batches=4', '--num_warmup_batches=1',
      '--result_dir=', '--job_name=controller', '--worker_hosts=a:1,b:2',
      '--ps_hosts=c:3', '--controller_host=d:4', sync])[0]
  rc = run_config.resolve(params, cluster_role=roles.resolve_role(params))
  rc, source = driver.open_input_source(params, rc)
  coordinator = Coordinator()
  trainer = train_step.Trainer(
      rc, strategies.Chosen(tf.distribute.get_strategy(), 'stand-in',
                            coordinator), source)
  losses = [trainer.step() for _ in range(5)]
  in_flight[sync] = coordinator.at_fetch
print('RESULT ' + json.dumps(in_flight))
'''


@pytest.mark.timeout(300)
def test_tf2_barrier_waits_for_each_round_and_async_queues_the_next():
  """ParameterServerStrategy, 2 workers: a round is one step per worker.
  --sync_updates=barrier fetches a round's losses before it schedules the
  next (2 steps in flight at every fetch); asynchronous training queues
  the next round first (4), except past the last warm-up step and the last
  timed one. Which weights a worker reads, and so the losses, follow from
  this order; the runtime's scheduling makes real clusters' losses
  irreproducible, so the order is what is compared."""
  in_flight = _in_a_fresh_process(_ROUNDS_SCRIPT)
  assert in_flight['--sync_updates=barrier'] == [2, 1] * 5, in_flight
  # Warm-up (1 round): nothing queued past it; then 4 timed rounds, each
  # with the next queued until the last.
  assert in_flight['--cross_replica_sync=False'] == [2, 1] + [4, 3] * 3 + [
      2, 1], in_flight
