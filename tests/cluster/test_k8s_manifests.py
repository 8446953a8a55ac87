"""`tf_cnn_benchmarks k8s` manifests, checked against the Kubernetes API.

No Kubernetes cluster here: each plain-form object is read by the
`kubernetes` client's own model classes (which refuse unknown fields and
wrong types) and must round-trip unchanged; the TFJob, a custom resource
the client has no model for, is checked against the openAPIV3Schema of
Kubeflow's CRD saved in tests/cluster/data (made strict: the API server
would silently drop an unknown field), and its pod templates with
V1PodTemplateSpec. Each plain-form pod's TF_CONFIG, with the index
Kubernetes would put in, must give that pod its role under the DNS name an
Indexed Job pod gets.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import jsonschema
from kubernetes import client
import pytest

from tests.cluster import helpers
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.cluster.launch import k8s_manifests
from tf_cnn_benchmarks.cluster import roles

SCHEMA = os.path.join(os.path.dirname(__file__), 'data',
                      'tfjob_v1_schema.json')
BENCHMARK = ['--model=trivial', '--device=cpu', '--batch_size=2']
# From the training-operator's Go types (pkg/apis/kubeflow.org/v1, v1.9.0):
# the CRD types these as plain strings.
TFJOB_REPLICA_TYPES = {'PS', 'Worker', 'Chief', 'Master', 'Evaluator'}


def _objects(args, benchmark=()):
  parsed = k8s_manifests.make_parser().parse_args(
      ['--image', 'registry.example/tf-cnn:1'] + list(args))
  return k8s_manifests.objects(parsed, list(BENCHMARK) + list(benchmark))


def _model(obj):
  """The client's model of ``obj``; raises on a wrong type.

  It drops fields it does not know, so _round_trip is the check for those.
  """
  kind = {'Service': 'V1Service', 'Job': 'V1Job',
          'NetworkPolicy': 'V1NetworkPolicy'}[obj['kind']]
  return client.ApiClient().deserialize(json.dumps(obj), kind,
                                        'application/json')


def _round_trip(obj):
  """``obj`` as the client reads and writes it back: equal to ``obj`` only
  when every field is one the Kubernetes API has, with its type."""
  return client.ApiClient().sanitize_for_serialization(_model(obj))


def _expand(value, env):
  """Kubernetes' $(VAR) expansion, from variables already defined."""
  return re.sub(r'\$\(([A-Za-z_][A-Za-z0-9_]*)\)',
                lambda m: env.get(m.group(1), m.group(0)), value)


def _pod_env(container, index):
  """The env Kubernetes gives an Indexed Job pod's container."""
  env = {}
  for var in container['env']:
    if 'valueFrom' in var:
      assert var['valueFrom'] == {'fieldRef': {
          'fieldPath': "metadata.annotations"
                       "['batch.kubernetes.io/job-completion-index']"}}
      env[var['name']] = str(index)
    else:
      env[var['name']] = _expand(var['value'], env)
  return env


@pytest.mark.parametrize('args, benchmark, jobs', [
    (['--ps', '2', '--workers', '3'], ['--variable_update=parameter_server'],
     {'ps': 2, 'worker': 3}),
    (['--workers', '2'], ['--variable_update=collective_all_reduce'],
     {'worker': 2}),
    (['--workers', '2'], ['--variable_update=distributed_all_reduce'],
     {'worker': 2, 'controller': 1}),
])
def test_plain_form_is_valid_kubernetes(args, benchmark, jobs):
  found = _objects(['--name', 'bench'] + args, benchmark)
  assert [o['kind'] for o in found] == ['Service'] + ['Job'] * len(jobs) + [
      'NetworkPolicy']
  for obj in found:
    assert _round_trip(obj) == obj
  service, job_objects = found[0], found[1:-1]
  assert service['spec']['clusterIP'] == 'None'
  for job in job_objects:
    spec = job['spec']
    role = job['metadata']['labels']['tf-cnn-benchmarks/job']
    assert spec['completionMode'] == 'Indexed'
    assert spec['completions'] == spec['parallelism'] == jobs[role]
    assert spec['backoffLimit'] == 0
    pod = spec['template']
    assert pod['spec']['restartPolicy'] == 'Never'
    assert pod['spec']['subdomain'] == service['metadata']['name']
    # The headless service selects every pod of the run.
    assert set(service['spec']['selector'].items()) <= set(
        pod['metadata']['labels'].items())


def test_plain_form_tf_config_gives_each_pod_its_role(monkeypatch):
  found = _objects(['--name', 'bench', '--ps', '1', '--workers', '2'],
                   ['--variable_update=parameter_server'])
  seen = []
  for job in found[1:-1]:
    pod = job['spec']['template']
    container = pod['spec']['containers'][0]
    for index in range(job['spec']['completions']):
      env = _pod_env(container, index)
      monkeypatch.setenv('TF_CONFIG', env['TF_CONFIG'])
      params, _ = flags.parse_command_line(['pod'] + container['args'])
      role = roles.resolve_role(params)
      # An Indexed Job pod's DNS name: <job name>-<index>.<subdomain>.
      assert role.address == '%s-%d.%s:2222' % (
          job['metadata']['name'], index, pod['spec']['subdomain'])
      seen.append(role.task_name)
  assert seen == ['ps0', 'worker0', 'worker1']


def test_tfjob_matches_the_kubeflow_crd():
  with open(SCHEMA) as f:
    schema = json.load(f)
  strict = _closed(schema)
  tfjob, policy = _objects(['--form', 'tfjob', '--ps', '2', '--workers', '3'],
                           ['--variable_update=parameter_server'])
  jsonschema.validate(tfjob, strict)
  assert _round_trip(policy) == policy
  assert (tfjob['apiVersion'], tfjob['kind']) == ('kubeflow.org/v1', 'TFJob')
  spec = tfjob['spec']
  assert spec['runPolicy']['backoffLimit'] == 0
  assert spec['runPolicy']['cleanPodPolicy'] in ('None', 'All', 'Running')
  replicas = spec['tfReplicaSpecs']
  assert set(replicas) <= TFJOB_REPLICA_TYPES
  assert {k: r['replicas'] for k, r in replicas.items()} == {
      'PS': 2, 'Worker': 3}
  for replica in replicas.values():
    assert replica['restartPolicy'] == 'Never'
    template = client.ApiClient().deserialize(
        json.dumps(replica['template']), 'V1PodTemplateSpec',
        'application/json')
    assert client.ApiClient().sanitize_for_serialization(template) == \
        replica['template']
    container = replica['template']['spec']['containers'][0]
    # The operator finds the container and port by these names.
    assert container['name'] == 'tensorflow'
    assert container['ports'][0]['name'] == 'tfjob-port'
    # The operator sets TF_CONFIG.
    assert 'TF_CONFIG' not in {e['name'] for e in container['env']}


def _closed(schema):
  """``schema`` with every object closed to properties it does not name."""
  if isinstance(schema, dict):
    schema = {k: _closed(v) for k, v in schema.items()}
    if 'properties' in schema and 'additionalProperties' not in schema:
      schema['additionalProperties'] = False
  elif isinstance(schema, list):
    schema = [_closed(v) for v in schema]
  return schema


def test_the_schema_checks_catch_wrong_fields():
  """The checks above can fail: a typo, a wrong type, an unknown field."""
  with open(SCHEMA) as f:
    strict = _closed(json.load(f))
  tfjob = _objects(['--form', 'tfjob'])[0]
  bad = json.loads(json.dumps(tfjob))
  bad['spec']['runPolicy']['backofLimit'] = 0
  with pytest.raises(jsonschema.ValidationError):
    jsonschema.validate(bad, strict)
  job = _objects([])[1]
  job['spec']['template']['spec']['restartPolicyy'] = 'Never'
  assert 'restartPolicyy' not in json.dumps(_round_trip(job))
  job = _objects([])[1]
  job['spec']['completions'] = '2'
  with pytest.raises(Exception, match='completions'):
    _model(job)
  service = _objects([])[0]
  service['spec']['ports'][0]['port'] = 2222.5
  with pytest.raises(Exception, match='port'):
    _model(service)


def test_results_volume_and_resources():
  job = _objects(['--results_pvc', 'bench-results', '--cpu', '3',
                  '--memory', '8Gi'], ['--result_dir=/data/runs'])[2]
  pod = job['spec']['template']['spec']
  container = pod['containers'][0]
  assert pod['volumes'][0] == {'name': 'results', 'persistentVolumeClaim': {
      'claimName': 'bench-results'}}
  assert container['volumeMounts'][0] == {'name': 'results',
                                          'mountPath': '/data/runs'}
  assert container['resources'] == {'requests': {'cpu': '3',
                                                 'memory': '8Gi'},
                                    'limits': {'cpu': '3', 'memory': '8Gi'}}
  # With a PVC nothing waits for kubectl cp.
  assert container['command'] == ['tf_cnn_benchmarks']
  default = _objects([])[2]['spec']['template']['spec']
  assert default['volumes'][0] == {'name': 'results', 'emptyDir': {}}
  assert '--result_dir=/results' in default['containers'][0]['args']


def test_held_pod_keeps_the_runs_exit_code(tmp_path):
  """With an emptyDir a training pod stays up for kubectl cp, then exits
  with the run's own code (run here with /bin/sh, a stand-in command)."""
  fake = tmp_path / 'fake_benchmark'
  fake.write_text('#!/bin/sh\necho "ran with $*"\nexit 3\n')
  fake.chmod(0o755)
  found = _objects(['--hold_seconds', '1', '--command', str(fake)])
  ps_container = found[1]['spec']['template']['spec']['containers'][0]
  assert ps_container['command'] == [str(fake)]  # ps tasks write no record
  worker = found[2]['spec']['template']['spec']['containers'][0]
  out = subprocess.run(worker['command'] + worker['args'],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, **{
                           e['name']: e['value'] for e in worker['env']
                           if 'value' in e}))
  assert out.returncode == 3, out
  assert 'ran with --model=trivial' in out.stdout
  assert 'records in /results; this pod stays up 1 s' in out.stdout


def _pod_specs(found):
  """Every pod template's spec, of either form."""
  specs = []
  for obj in found:
    if obj['kind'] == 'Job':
      specs.append(obj['spec']['template'])
    elif obj['kind'] == 'TFJob':
      specs += [r['template'] for r in obj['spec']['tfReplicaSpecs'].values()]
  return specs


@pytest.mark.parametrize('form', ['plain', 'tfjob'])
def test_only_the_runs_own_pods_reach_its_pods(form):
  """TensorFlow's servers have no authentication: a NetworkPolicy selects
  every pod of the run and admits ingress from those pods only."""
  found = _objects(['--form', form, '--name', 'bench', '--ps', '1'],
                   ['--variable_update=parameter_server'])
  (policy,) = [o for o in found if o['kind'] == 'NetworkPolicy']
  assert _round_trip(policy) == policy
  spec = policy['spec']
  assert spec['policyTypes'] == ['Ingress']
  (rule,) = spec['ingress']
  (peer,) = rule['from']
  assert set(peer) == {'podSelector'} and 'ports' not in rule
  assert peer['podSelector'] == spec['podSelector']
  selected = spec['podSelector']['matchLabels']
  assert selected['tf-cnn-benchmarks/cluster'] == 'bench'
  templates = _pod_specs(found)
  assert templates
  for template in templates:
    assert set(selected.items()) <= set(template['metadata']['labels'].items())


@pytest.mark.parametrize('form', ['plain', 'tfjob'])
def test_pods_run_without_root_powers_and_with_limits(form):
  found = _objects(['--form', form, '--ps', '1', '--cpu', '3'],
                   ['--variable_update=parameter_server'])
  for template in _pod_specs(found):
    pod = template['spec']
    assert pod['automountServiceAccountToken'] is False
    assert pod['securityContext'] == {'fsGroup': 1000}
    (container,) = pod['containers']
    assert container['securityContext'] == {
        'allowPrivilegeEscalation': False, 'readOnlyRootFilesystem': True,
        'capabilities': {'drop': ['ALL']},
        'seccompProfile': {'type': 'RuntimeDefault'},
        'runAsNonRoot': True, 'runAsUser': 1000, 'runAsGroup': 1000}
    # What the harness and TensorFlow write outside the results: /tmp.
    assert {'name': 'tmp', 'emptyDir': {'sizeLimit': '2Gi'}} in pod['volumes']
    assert {'name': 'tmp', 'mountPath': '/tmp'} in container['volumeMounts']
    env = {e['name']: e.get('value') for e in container['env']}
    assert env['HOME'] == env['TMPDIR'] == '/tmp'
    resources = container['resources']
    assert resources['requests'] == resources['limits'] == {
        'cpu': '3', 'memory': '4Gi'}
  as_root = _pod_specs(_objects(['--form', form, '--run_as_user', '0']))
  for template in as_root:
    (container,) = template['spec']['containers']
    assert 'runAsNonRoot' not in container['securityContext']
    assert 'securityContext' not in template['spec']


def _held_worker(tmp_path, fake_script, *extra, benchmark=()):
  fake = tmp_path / 'fake_benchmark'
  fake.write_text(fake_script)
  fake.chmod(0o755)
  found = _objects(['--hold_seconds', '30', '--command', str(fake)] +
                   list(extra), benchmark)
  worker = found[2]['spec']['template']['spec']['containers'][0]
  env = dict(os.environ, **{e['name']: e['value'] for e in worker['env']
                            if 'value' in e})
  return worker['command'] + worker['args'], env


def test_a_held_pod_forwards_sigterm_to_the_run(tmp_path):
  """kubelet's SIGTERM goes to the pod's PID 1, the hold's shell: the run
  must get it (to stop and record itself), and the pod must then end
  with the run's code, not sleep out the hold."""
  got = tmp_path / 'got_sigterm'
  argv, env = _held_worker(tmp_path, (
      '#!/bin/sh\ntrap \'touch %s; exit 130\' TERM\necho started\n'
      'while :; do sleep 0.1; done\n') % got)
  shell = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
  try:
    assert shell.stdout.readline() == 'started\n'
    # The run may print before its shell has taken its pid (`pid=$!`); a
    # signal then is handled by the line after it, not by the trap this
    # test is about (the mutation check once saw the trap broken and the
    # test green). A moment later the shell is in `wait`.
    time.sleep(1.0)
    shell.send_signal(signal.SIGTERM)
    assert shell.wait(timeout=10) == 130
  finally:
    shell.kill()
    shell.wait()
  assert got.exists()


def test_the_hold_runs_nothing_from_the_flags(tmp_path):
  """--result_dir reaches the hold's shell as data, never as shell text."""
  marker = tmp_path / 'ran'
  folder = '/r$(touch %s)' % marker
  argv, env = _held_worker(tmp_path, '#!/bin/sh\nexit 3\n',
                           benchmark=['--result_dir=' + folder])
  shell = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
  try:
    line = shell.stdout.readline()
    assert not marker.exists()
    shell.send_signal(signal.SIGTERM)  # ends the hold
    assert shell.wait(timeout=10) == 3
  finally:
    shell.kill()
    shell.wait()
  assert not marker.exists()
  assert 'records in %s;' % folder in line, line


def test_output_dir_has_one_file_per_object(tmp_path):
  out = subprocess.run(
      [sys.executable, helpers.SCRIPT, 'k8s', '--image', 'i:1', '--ps', '1',
       '--workers', '2', '--output_dir', str(tmp_path / 'm'), '--'] +
      BENCHMARK, cwd=helpers.REPO, capture_output=True, text=True,
      timeout=120, env=helpers.child_env())
  assert out.returncode == 0, out.stderr
  names = sorted(os.listdir(tmp_path / 'm'))
  assert names == ['00-service-tf-cnn-benchmarks.json',
                   '01-job-tf-cnn-benchmarks-ps.json',
                   '02-job-tf-cnn-benchmarks-worker.json',
                   '03-networkpolicy-tf-cnn-benchmarks-peers-only.json']
  for name in names:
    with open(tmp_path / 'm' / name) as f:
      obj = json.load(f)
    assert _round_trip(obj) == obj


@pytest.mark.parametrize('argv, message', [
    (['--image', 'i', '--', '--modle=trivial'],
     'Unknown flag --modle. Did you mean --model?'),
    (['--image', 'i', '--', '--job_name=worker'],
     'remove --job_name from the benchmark flags'),
    (['--image', 'i', '--form', 'tfjob', '--',
      '--variable_update=distributed_all_reduce'], 'use --form=plain'),
    (['--image', 'i', '--', '--result_dir=runs'],
     'in a pod give an absolute folder'),
    (['--image', 'i', '--ps', '1', '--',
      '--variable_update=collective_all_reduce'], 'uses no parameter servers'),
    (['--image', 'i', '--', '--variable_update=replicated'],
     'k8s runs a cluster'),
    (['--image', 'i', '--name', 'Bench_1'], '--name=Bench_1 must be a DNS'),
    (['--image', 'i', '--model=trivial'], 'not a k8s option'),
])
def test_bad_input_is_one_usage_error_and_no_manifest(argv, message, capsys):
  code = k8s_manifests.main(['k8s'] + argv)
  captured = capsys.readouterr()
  assert code == exit_codes.USAGE
  assert captured.out == ''
  lines = captured.err.splitlines()
  assert len(lines) == 1 and message in lines[0], captured.err
