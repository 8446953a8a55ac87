"""Cluster descriptions, roles and the launcher's task list (no cluster).

Fast checks of what is decided before any server starts: host lists, spec
files (plain and TF_CONFIG), roles, device filters, ps placement, the
protocol check, and bad input ending as a one-paragraph usage error.
"""

import json
import subprocess
import sys

import pytest
import tensorflow as tf

from tests.cluster import helpers
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.cluster.launch import launcher
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster import server
from tf_cnn_benchmarks.cluster.launch import process_groups
from tf_cnn_benchmarks.variable_update import cluster_base

PS = '10.0.0.1:2222'
WORKERS = '10.0.0.2:2222,10.0.0.3:2222'


def _role(**overrides):
  settings = dict(job_name='worker', ps_hosts=PS, worker_hosts=WORKERS)
  settings.update(overrides)
  return roles.resolve_role(flags.make_params(**settings))


def test_worker_role_from_host_flags():
  role = _role(task_index=1)
  assert (role.job_name, role.task_index, role.num_workers, role.num_ps) == (
      'worker', 1, 2, 1)
  assert not role.is_chief and _role().is_chief
  # A between-graph worker's sessions see the ps tasks and itself only.
  assert role.device_filters() == ['/job:ps', '/job:worker/task:1']
  towers, global_step_device, workers = role.placement('cpu', 2)
  assert towers == ['/job:worker/task:1/device:CPU:0',
                    '/job:worker/task:1/device:CPU:1']
  assert global_step_device.startswith('/job:ps/task:0')
  assert workers == 2


def test_per_task_files_do_not_collide():
  assert roles.per_task_path('/t/trace.json', _role()) == '/t/trace.json'
  assert roles.per_task_path('/t/trace.json', _role(task_index=1)) == \
      '/t/trace.worker1.json'
  assert roles.per_task_path('graph.pbtxt', None) == 'graph.pbtxt'
  controller = _role(job_name='controller', controller_host='10.0.0.4:2222',
                     ps_hosts='', variable_update='distributed_all_reduce')
  assert roles.per_task_path('g', controller) == 'g'  # the chief


def test_controller_drives_every_worker_device():
  role = _role(job_name='controller', ps_hosts='', controller_host=
               '10.0.0.9:2222', variable_update='distributed_all_reduce')
  assert role.is_chief and role.trains
  assert role.serving_tasks() == [('worker', 0), ('worker', 1)]
  towers, _, workers = role.placement('cpu', 1)
  assert towers == ['/job:worker/task:0/device:CPU:0',
                    '/job:worker/task:1/device:CPU:0'] and workers == 1
  worker = _role(ps_hosts='', controller_host='10.0.0.9:2222',
                 variable_update='distributed_all_reduce')
  assert not worker.trains and worker.clients() == [('controller', 0)]


@pytest.mark.parametrize('overrides, message', [
    (dict(worker_hosts='10.0.0.2'), "'10.0.0.2' is not host:port"),
    (dict(worker_hosts='10.0.0.2:99999'), 'is not host:port'),
    (dict(task_index=2), '--task_index=2 is out of range: job worker has 2'),
    (dict(job_name='ps', task_index=1), 'job ps has 1 task(s)'),
    (dict(ps_hosts=''), 'keeps the variables on parameter servers'),
    (dict(variable_update='collective_all_reduce'), 'uses no parameter '
     'servers'),
    (dict(ps_hosts='', variable_update='distributed_all_reduce'),
     'give --controller_host'),
    (dict(job_name='controller'), 'A controller task only exists'),
    (dict(ps_hosts='10.0.0.2:2222'), 'Two tasks share the address'),
    (dict(cluster_spec='/no/such/spec.json', job_name='', ps_hosts='',
          worker_hosts=''), 'no such file'),
])
def test_bad_cluster_descriptions_are_usage_errors(overrides, message):
  with pytest.raises(flags.UsageError) as e:
    _role(**overrides)
  assert message in str(e.value)
  assert '\n' not in str(e.value)


@pytest.mark.parametrize('overrides, message', [
    (dict(variable_update='replicated'), 'runs in a single process'),
    (dict(server_protocol='grpc+foo'), 'not a TensorFlow server protocol'),
    (dict(variable_update='collective_all_reduce', ps_hosts='',
          cross_replica_sync=False), 'synchronous by construction'),
])
def test_bad_cluster_flags_are_usage_errors(overrides, message):
  with pytest.raises(flags.UsageError) as e:
    _role(**overrides)
  assert message in str(e.value)


def test_plain_spec_file(tmp_path):
  spec = tmp_path / 'cluster.json'
  spec.write_text(json.dumps({'ps': [PS], 'worker': WORKERS.split(',')}))
  role = roles.resolve_role(flags.make_params(
      cluster_spec=str(spec), job_name='ps'))
  assert role.job_name == 'ps' and role.jobs['worker'] == tuple(
      WORKERS.split(','))


def test_tf_config_spec_file_with_a_chief(tmp_path):
  """TF_CONFIG's chief becomes worker 0; its workers shift up by one."""
  spec = tmp_path / 'tf_config.json'
  spec.write_text(json.dumps({
      'cluster': {'chief': ['10.0.0.5:1'], 'worker': WORKERS.split(','),
                  'ps': [PS]},
      'task': {'type': 'worker', 'index': 1}}))
  role = roles.resolve_role(flags.make_params(cluster_spec=str(spec)))
  assert (role.job_name, role.task_index, role.num_workers) == (
      'worker', 2, 3)
  assert role.jobs['worker'][0] == '10.0.0.5:1'
  with pytest.raises(flags.UsageError, match='contradict'):
    roles.resolve_role(flags.make_params(
        cluster_spec=str(spec), job_name='ps', task_index=0))
  with pytest.raises(flags.UsageError, match='either the file or the host'):
    roles.resolve_role(flags.make_params(
        cluster_spec=str(spec), worker_hosts=WORKERS))


def test_ps_placement_spreads_variables_by_size():
  placer = cluster_base.PsPlacer(2)
  placed = {}
  with tf.Graph().as_default():
    with tf.compat.v1.device(placer.device_function('/job:worker/task:0')):
      for name, shape in (('big', [1000, 100]), ('medium', [600, 100]),
                          ('small', [300, 100]), ('tiny', [10])):
        v = tf.compat.v1.get_variable(name, shape)
        placed[name] = v.device
  assert placed['big'].startswith('/job:ps/task:0')
  assert placed['medium'].startswith('/job:ps/task:1')
  assert placed['small'].startswith('/job:ps/task:1')
  assert placed['tiny'].startswith('/job:ps/task:1')
  assert placer.loads == [400000, 360040]


def test_available_protocols_are_read_from_the_error():
  text = ('No server factory registered for the given ServerDef: ... The '
          'available server factories are: [ GRPC_SERVER VERBS_SERVER ]')
  assert server.available_protocols(text) == ['grpc', 'grpc+verbs']


def _launcher_tasks(launcher_args, benchmark_flags):
  args = launcher.make_parser().parse_args(launcher_args)
  chosen = launcher.read_benchmark_flags(benchmark_flags)
  return launcher.build_tasks(args, benchmark_flags, chosen)


def test_launcher_task_list():
  tasks = _launcher_tasks(['--workers', '2'],
                          ['--variable_update=distributed_all_reduce'])
  assert [t.label for t in tasks] == ['worker0', 'worker1', 'controller0']
  argv = tasks[2].argv
  assert '--job_name=controller' in argv and any(
      a.startswith('--controller_host=127.0.0.1:') for a in argv)
  tasks = _launcher_tasks(['--workers', '2'], [])  # parameter_server: one ps
  assert [t.label for t in tasks] == ['ps0', 'worker0', 'worker1']
  assert len({t.address for t in tasks}) == 3
  with pytest.raises(flags.UsageError, match='remove --task_index'):
    launcher.read_benchmark_flags(['--task_index=1'])


def test_launcher_tasks_do_not_inherit_tf_config(monkeypatch):
  # The launcher gives each task its place by flags; an exported TF_CONFIG
  # would contradict them (a usage error in every task).
  monkeypatch.setenv('TF_CONFIG', '{"cluster": {"worker": ["h:1"]}}')
  assert 'TF_CONFIG' not in process_groups.child_env()


@pytest.mark.parametrize('given', [
    ['--variable_update', 'distributed_all_reduce'],
    ['-variable_update=distributed_all_reduce'],
    ['--flagfile={flagfile}']])
def test_launcher_reads_the_mode_as_the_tasks_will(given, tmp_path):
  # Every form absl accepts, so the cluster is the one the tasks expect.
  flagfile = tmp_path / 'flags'
  flagfile.write_text('--variable_update=distributed_all_reduce\n')
  given = [g.format(flagfile=flagfile) for g in given]
  tasks = _launcher_tasks(['--workers', '1'], given)
  assert [t.label for t in tasks] == ['worker0', 'controller0']


def test_launcher_checks_the_protocol_once_with_the_tasks_verbosity(
    monkeypatch, capsys):
  seen = {}

  def check_protocol(protocol):
    seen['protocol'] = protocol
    raise flags.UsageError('no server for --server_protocol=%s' % protocol)

  monkeypatch.setattr(launcher.logs, 'configure_before_tensorflow',
                      lambda verbosity: seen.setdefault('verbosity', verbosity))
  monkeypatch.setattr(launcher.logs, 'import_tensorflow_quietly',
                      lambda verbosity: None)
  monkeypatch.setattr(launcher.server, 'check_protocol', check_protocol)
  code = launcher.main(['launch', '--', '--server_protocol', 'grpc+verbs',
                        '--verbosity', '2'])
  assert code == exit_codes.USAGE
  assert seen == {'protocol': 'grpc+verbs', 'verbosity': 2}
  assert capsys.readouterr().err == (
      'Error: no server for --server_protocol=grpc+verbs\n')


def test_launcher_bad_benchmark_flag_is_one_usage_error(capsys):
  code = launcher.main(['launch', '--', '--num_batches=many'])
  assert code == exit_codes.USAGE
  err = capsys.readouterr().err.splitlines()
  assert len(err) == 1 and err[0].startswith('Error: --num_batches=many is not a number'), err


def _cli(*args, timeout=120):
  return subprocess.run([sys.executable, helpers.SCRIPT] + list(args),
                        cwd=helpers.REPO, capture_output=True, text=True,
                        timeout=timeout, env=helpers.child_env())


def test_bad_host_list_exits_2_before_tensorflow_loads():
  out = _cli('--job_name=worker', '--worker_hosts=10.0.0.2',
             '--ps_hosts=' + PS)
  assert out.returncode == exit_codes.USAGE
  assert out.stderr.startswith('Error: --worker_hosts:')
  assert 'tensorflow' not in out.stderr.lower()


@pytest.mark.timeout(120)
def test_missing_protocol_is_one_line_and_exit_2():
  out = _cli('--job_name=worker', '--worker_hosts=127.0.0.1:1',
             '--ps_hosts=127.0.0.1:2', '--server_protocol=grpc+verbs')
  assert out.returncode == exit_codes.USAGE, out.stderr
  errors = [l for l in out.stderr.splitlines() if l.startswith('Error:')]
  assert len(errors) == 1, out.stderr
  assert ('has no server for --server_protocol=grpc+verbs; it has: grpc.'
          in errors[0])
  assert 'built from source with verbs support' in errors[0]
  assert out.stdout == ''
