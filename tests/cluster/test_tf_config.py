"""Tasks started with the TF_CONFIG environment variable and no cluster flags.

The fast tests check how TF_CONFIG becomes a role (a chief is worker 0) and
that flags contradicting it, or TF_CONFIG that is not JSON, end as one
usage error. The cluster tests start real tasks on loopback whose only
cluster description is TF_CONFIG, as Kubeflow's TFJob starts them.
"""

import json
import subprocess
import sys

import pytest

from tests.cluster import helpers
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flag_checks
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.cluster.launch import launcher
from tf_cnn_benchmarks.cluster import roles

PS = ['10.0.0.1:2222']
WORKERS = ['10.0.0.2:2222', '10.0.0.3:2222']
CHIEF = ['10.0.0.9:2222']


def _tf_config(task_type, index, chief=False):
  cluster = {'ps': PS, 'worker': WORKERS}
  if chief:
    cluster['chief'] = CHIEF
  return json.dumps({'cluster': cluster,
                     'task': {'type': task_type, 'index': index}})


def _role(monkeypatch, tf_config, **flag_values):
  monkeypatch.setenv('TF_CONFIG', tf_config)
  return roles.resolve_role(flags.make_params(**flag_values))


@pytest.mark.parametrize('task_type, index, chief, ours', [
    ('ps', 0, False, ('ps', 0)),
    ('worker', 1, False, ('worker', 1)),
    # chief -> worker 0; TF_CONFIG's worker i -> worker i+1.
    ('chief', 0, True, ('worker', 0)),
    ('worker', 0, True, ('worker', 1)),
    ('worker', 1, True, ('worker', 2)),
])
def test_tf_config_alone_gives_the_role(monkeypatch, task_type, index, chief,
                                        ours):
  role = _role(monkeypatch, _tf_config(task_type, index, chief))
  assert (role.job_name, role.task_index) == ours
  assert role.jobs['ps'] == tuple(PS)
  assert role.jobs['worker'] == tuple((CHIEF if chief else []) + WORKERS)
  assert role.is_chief == (ours == ('worker', 0))


def test_tf_config_makes_a_cluster_task_only_when_it_names_a_cluster(
    monkeypatch):
  params = flags.make_params()
  assert not flag_checks.is_cluster_task(params)
  for no_cluster in ('', '  ', '{}', '{"cluster": {}}'):
    monkeypatch.setenv('TF_CONFIG', no_cluster)
    assert not flag_checks.is_cluster_task(params), no_cluster
  monkeypatch.setenv('TF_CONFIG', _tf_config('worker', 0))
  assert flag_checks.is_cluster_task(params)


def test_flags_that_agree_with_tf_config_are_accepted(monkeypatch):
  role = _role(monkeypatch, _tf_config('worker', 1), job_name='worker',
               task_index=1, worker_hosts=','.join(WORKERS))
  assert (role.job_name, role.task_index) == ('worker', 1)


@pytest.mark.parametrize('flag_values, named', [
    (dict(job_name='ps'), '--job_name=ps --task_index=0 contradict TF_CONFIG, '
     'whose task is worker 1 (worker1 here)'),
    (dict(task_index=0, job_name='worker'), 'contradict TF_CONFIG'),
    (dict(task_index=2), '--job_name=(not given) --task_index=2 contradict'),
    (dict(worker_hosts='10.0.0.2:2222'), '--worker_hosts=10.0.0.2:2222 '
     'contradicts TF_CONFIG, whose worker job is 10.0.0.2:2222,10.0.0.3:2222'),
    (dict(ps_hosts='10.0.0.7:2222'), '--ps_hosts=10.0.0.7:2222 contradicts '
     'TF_CONFIG'),
    (dict(cluster_spec='/some/spec.json'), '--cluster_spec=/some/spec.json and '
     'TF_CONFIG both describe the cluster'),
])
def test_flags_contradicting_tf_config_are_usage_errors(monkeypatch,
                                                        flag_values, named):
  with pytest.raises(flags.UsageError) as e:
    _role(monkeypatch, _tf_config('worker', 1), **flag_values)
  assert named in str(e.value)
  assert '\n' not in str(e.value)


def test_a_chief_task_contradicts_flags_in_our_numbering(monkeypatch):
  with pytest.raises(flags.UsageError, match=r'whose task is worker 0 '
                     r'\(worker1 here\)'):
    _role(monkeypatch, _tf_config('worker', 0, chief=True),
          job_name='worker', task_index=0)


@pytest.mark.parametrize('text, quoted', [
    ('{"cluster": {"worker": ["a:1"]', 'is not valid JSON'),
    ("{'cluster': {}}", "is not valid JSON (Expecting property name"),
    ('["a:1"]', 'must be a JSON object'),
    ('{"cluster": {"worker": ["a:1"], "evaluator": ["b:1"]}, "task": '
     '{"type": "worker", "index": 0}}', 'TF_CONFIG: unknown job(s) evaluator'),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", '
     '"index": "0"}}', 'TF_CONFIG: task {"type": "worker", "index": "0"} is '
     'not one of'),
    ('{"cluster": {"worker": "a"}, "task": {"type": "worker"}}',
     "TF_CONFIG: worker: 'a' is not host:port"),
])
def test_malformed_tf_config_is_a_usage_error_quoting_it(monkeypatch, text,
                                                         quoted):
  with pytest.raises(flags.UsageError) as e:
    _role(monkeypatch, text)
  assert quoted in str(e.value)
  assert '\n' not in str(e.value)


def test_malformed_tf_config_exits_2_before_tensorflow_loads():
  out = subprocess.run(
      [sys.executable, helpers.SCRIPT, '--model=trivial'], cwd=helpers.REPO,
      capture_output=True, text=True, timeout=120,
      env=helpers.child_env({'TF_CONFIG': '{"cluster": {"worker": [}'}))
  assert out.returncode == exit_codes.USAGE, out.stderr
  lines = out.stderr.splitlines()
  assert len(lines) == 1 and lines[0].startswith(
      'Error: TF_CONFIG is not valid JSON'), out.stderr
  assert '\'{"cluster": {"worker": [}\'' in lines[0]


def _run_cluster(tmp_path, cluster, tasks, timeout=150):
  """Starts every (type, index) of ``tasks`` with TF_CONFIG as its only
  cluster description; returns {label: (exit code, output)}."""
  flags_ = helpers.tiny_flags(str(tmp_path), variable_update='parameter_server')
  processes = {}
  try:
    for task_type, index in tasks:
      label = '%s%d' % (task_type, index)
      env = {'TF_CONFIG': json.dumps({
          'cluster': cluster, 'task': {'type': task_type, 'index': index}})}
      processes[label] = helpers.start(
          [helpers.SCRIPT] + flags_, log_path=str(tmp_path / label),
          env=env)
    for process in processes.values():
      process.wait(timeout=timeout)
  finally:
    helpers.kill(processes.values())
  return {label: (p.returncode, helpers.read(str(tmp_path / label)))
          for label, p in processes.items()}


def _addresses(count):
  return ['127.0.0.1:%d' % p for p in launcher.free_ports('127.0.0.1', count)]


@pytest.mark.cluster
@pytest.mark.timeout(240)
def test_one_ps_two_workers_from_tf_config_only(tmp_path):
  ps, w0, w1 = _addresses(3)
  ended = _run_cluster(tmp_path, {'ps': [ps], 'worker': [w0, w1]},
                       [('ps', 0), ('worker', 0), ('worker', 1)])
  for label, (code, output) in ended.items():
    assert code == 0, '%s:\n%s' % (label, output)
  recs = helpers.records(str(tmp_path))
  assert sorted(recs) == ['worker0', 'worker1']
  for rec in recs.values():
    assert rec['config']['cluster'] == {'ps': [ps], 'worker': [w0, w1]}
  assert 'cluster images/sec:' in ended['worker0'][1]


@pytest.mark.cluster
@pytest.mark.timeout(240)
def test_chief_worker_and_ps_from_tf_config_only(tmp_path):
  """TF_CONFIG's chief trains as worker 0, its worker 0 as worker 1."""
  ps, chief, worker = _addresses(3)
  ended = _run_cluster(
      tmp_path, {'chief': [chief], 'worker': [worker], 'ps': [ps]},
      [('ps', 0), ('chief', 0), ('worker', 0)])
  for label, (code, output) in ended.items():
    assert code == 0, '%s:\n%s' % (label, output)
  recs = helpers.records(str(tmp_path))
  assert sorted(recs) == ['worker0', 'worker1']
  assert recs['worker0']['config']['cluster']['worker'] == [chief, worker]
  # Only the chief measures the cluster's rate from the global step.
  assert 'cluster images/sec:' in ended['chief0'][1]
  assert 'cluster images/sec:' not in ended['worker0'][1]
