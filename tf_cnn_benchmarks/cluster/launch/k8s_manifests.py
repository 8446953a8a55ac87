"""`tf_cnn_benchmarks k8s`: Kubernetes manifests for a cluster run.

  tf_cnn_benchmarks k8s --ps 2 --workers 4 --image IMAGE -- --model=resnet50 ...

Writes the objects that run every task as a pod, as JSON (which kubectl
reads as it reads YAML): one List on stdout, or one file per object in
--output_dir. Every task learns its place from TF_CONFIG (config/tf_config.py,
cluster/roles.py), so the benchmark flags are the same for every pod.

Two forms:
  plain   (default; any Kubernetes >= 1.24, nothing to install) a headless
          Service plus one Indexed Job per role (ps, worker, controller).
          An Indexed Job's pod gets the hostname <job name>-<index> and,
          with the Service as its subdomain, the DNS name
          <job name>-<index>.<service>; the pod's completion index (the
          batch.kubernetes.io/job-completion-index annotation, which is also
          JOB_COMPLETION_INDEX) is put into TF_CONFIG's task index.
  tfjob   a Kubeflow TFJob (kubeflow.org/v1): the training operator makes
          the pods and services and sets TF_CONFIG itself.

No pod restarts (restartPolicy Never, backoffLimit 0): a benchmark that
restarted silently would report a run that did not happen as measured.

Safe by default, as TensorFlow's servers have no authentication: a
NetworkPolicy admits to the run's pods only the run's own pods; each pod
runs as a non-root user (--run_as_user; the TensorFlow images run as root
by default, and need nothing of root's), with no privilege escalation, no
capabilities, a read-only root file system (an emptyDir at /tmp, which is
also HOME, for what the harness and TensorFlow write there), the runtime's
default seccomp profile and no service-account token; and it requests
and is limited to --cpu and --memory (Guaranteed QoS: a benchmark's pod is
neither throttled below nor evicted before its neighbours).
"""

import argparse
import json
import os
import re
import sys
import uuid

from basics import atomic_files
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.config import tf_config
from tf_cnn_benchmarks.cluster.launch import cluster_command
from tf_cnn_benchmarks.cluster import roles

PLAIN, TFJOB = 'plain', 'tfjob'
CONTAINER = 'tensorflow'     # the name the TFJob operator looks for
PORT_NAME = 'tfjob-port'     # the port name the TFJob operator looks for
RESULTS_VOLUME = 'results'
TMP_VOLUME = 'tmp'
TMP_DIR = '/tmp'
DEFAULT_RUN_AS_USER = 1000
DEFAULT_RESULT_DIR = '/results'
DEFAULT_HOLD_SECONDS = 600
# The annotation an Indexed Job's pod carries its index in (the Job
# controller also exposes it as JOB_COMPLETION_INDEX, but appends that to
# the container's env, after our TF_CONFIG, where $(...) cannot see it).
INDEX_ANNOTATION = ("metadata.annotations"
                    "['batch.kubernetes.io/job-completion-index']")
INDEX_ENV = 'TF_CNN_BENCHMARKS_TASK_INDEX'
_LABEL = 'tf-cnn-benchmarks/'
_DNS_LABEL = re.compile(r'^[a-z]([-a-z0-9]*[a-z0-9])?$')
_TFJOB_REPLICA = {roles.PS: 'PS', roles.WORKER: 'Worker'}


def make_parser():
  parser = argparse.ArgumentParser(
      prog='tf_cnn_benchmarks k8s',
      description='Write Kubernetes manifests that run a cluster (ps tasks, '
                  'workers, controller) as pods. Benchmark flags go after '
                  '"--". Apply with kubectl apply -f.',
      epilog='Example: tf_cnn_benchmarks k8s --ps 1 --workers 2 --image '
             'registry/tf-cnn-benchmarks:latest -- --model=resnet50 '
             '--device=cpu --variable_update=parameter_server | '
             'kubectl apply -f -')
  parser.add_argument('--image', required=True,
                      help='container image with tf_cnn_benchmarks and '
                           'TensorFlow installed')
  cluster_command.add_size_arguments(parser)
  parser.add_argument('--form', choices=(PLAIN, TFJOB), default=PLAIN,
                      help='plain: a headless Service and an Indexed Job per '
                           'role (default); tfjob: a Kubeflow TFJob')
  parser.add_argument('--name', default='tf-cnn-benchmarks',
                      help='name of the objects (a DNS label)')
  parser.add_argument('--namespace', default=None,
                      help='namespace of the objects (default: kubectl\'s)')
  parser.add_argument('--port', type=int, default=2222,
                      help='port every task listens on')
  parser.add_argument('--cpu', default='2',
                      help='CPU each pod requests, and its limit (Kubernetes '
                           'quantity)')
  parser.add_argument('--memory', default='4Gi',
                      help='memory each pod requests, and its limit')
  parser.add_argument('--tmp_size', default='2Gi',
                      help='size limit of each pod\'s writable /tmp '
                           '(an emptyDir; the root file system is '
                           'read-only)')
  parser.add_argument('--run_as_user', type=int, default=DEFAULT_RUN_AS_USER,
                      help='user id (and group id) the pods run as; 0 runs '
                           'them as the image\'s own user (root in '
                           'TensorFlow\'s images), without runAsNonRoot')
  parser.add_argument('--command', default='tf_cnn_benchmarks',
                      help='the harness\'s command inside the image')
  parser.add_argument('--results_pvc', default=None,
                      help='PersistentVolumeClaim for the run records '
                           '(ReadWriteMany when pods share it across nodes); '
                           'default: an emptyDir per pod')
  parser.add_argument('--hold_seconds', type=int, default=None,
                      help='seconds a training pod stays up after its run, '
                           'so its records can be copied with kubectl cp '
                           '(default: %d with an emptyDir, 0 with '
                           '--results_pvc)' % DEFAULT_HOLD_SECONDS)
  parser.add_argument('--output_dir', default=None,
                      help='write one JSON file per object here instead of '
                           'a List to stdout')
  return parser


def _check_args(args):
  longest = '%s-controller-%d' % (args.name, max(args.workers, 1) - 1)
  if not _DNS_LABEL.match(args.name) or len(longest) > 63:
    raise flags.UsageError(
        '--name=%s must be a DNS label (lower-case letters, digits and "-", '
        'starting with a letter) short enough that the pod hostname %s is '
        'at most 63 characters.' % (args.name, longest))
  if not 0 < args.port < 65536:
    raise flags.UsageError('--port=%d is not a TCP port.' % args.port)
  if args.hold_seconds is not None and args.hold_seconds < 0:
    raise flags.UsageError('--hold_seconds must be >= 0.')
  if args.run_as_user < 0:
    raise flags.UsageError(
        '--run_as_user=%d is not a user id; give one >= 1 (0 runs the pods '
        'as the image\'s own user).' % args.run_as_user)


def read_benchmark_flags(benchmark_flags):
  """The flags after `--`, parsed as every pod will parse them."""
  return cluster_command.read_benchmark_flags(
      'k8s', benchmark_flags,
      'Every pod learns its place in the cluster from %s, and the run id '
      'is set here' % tf_config.ENV)


class Plan:
  """The tasks of one run and every fact its manifests need."""

  def __init__(self, args, benchmark_flags, chosen):
    mode = cluster_command.cluster_mode('k8s', chosen)
    controller = roles.has_controller(mode, chosen.engine)
    if args.form == TFJOB and controller:
      raise flags.UsageError(
          '--variable_update=%s needs a controller task, and a TFJob has no '
          'replica type for one; use --form=plain.' % mode.name)
    self.args = args
    self.num_ps = cluster_command.num_ps_tasks(args, mode)
    self.counts = {roles.PS: self.num_ps, roles.WORKER: args.workers,
                   roles.CONTROLLER: int(controller)}
    result_dir = chosen['result_dir']
    if result_dir.present and not os.path.isabs(result_dir.value or ''):
      raise flags.UsageError(
          '--result_dir=%s: in a pod give an absolute folder (the results '
          'volume is mounted there), or leave it out for %s.' % (
              result_dir.value, DEFAULT_RESULT_DIR))
    self.result_dir = (result_dir.value if result_dir.present
                       else DEFAULT_RESULT_DIR)
    self.hold_seconds = (args.hold_seconds if args.hold_seconds is not None
                         else 0 if args.results_pvc else DEFAULT_HOLD_SECONDS)
    self.task_flags = list(benchmark_flags) + (
        [] if result_dir.present else ['--result_dir=' + self.result_dir]) + [
            '--cluster_run_id=' + uuid.uuid4().hex]
    self.trains = {}
    self._check_every_task()

  def jobs(self):
    return [job for job in (roles.PS, roles.WORKER, roles.CONTROLLER)
            if self.counts[job]]

  def job_object_name(self, job):
    return '%s-%s' % (self.args.name, job)

  def cluster(self):
    """TF_CONFIG's "cluster" of the plain form: each pod's DNS name."""
    return {job: ['%s-%d.%s:%d' % (self.job_object_name(job), i,
                                   self.args.name, self.args.port)
                  for i in range(self.counts[job])]
            for job in self.jobs()}

  def _check_every_task(self):
    """Resolves every task's role as its pod will, before writing anything.

    A bad combination (say --variable_update=collective_all_reduce with
    --ps 1) is then one message here rather than a failed pod.
    """
    for job in self.jobs():
      for index in range(self.counts[job]):
        params, _ = flags.parse_command_line(['k8s'] + self.task_flags + [
            '--job_name=' + job, '--task_index=%d' % index] + [
                '--%s=%s' % (flag, ','.join(hosts)) for flag, hosts in (
                    ('ps_hosts', self.cluster().get(roles.PS)),
                    ('worker_hosts', self.cluster().get(roles.WORKER)),
                    ('controller_host',
                     self.cluster().get(roles.CONTROLLER))) if hosts])
        self.trains[job] = roles.resolve_role(params).trains


def _labels(plan, job=None):
  labels = {'app.kubernetes.io/name': 'tf-cnn-benchmarks',
            _LABEL + 'cluster': plan.args.name}
  if job:
    labels[_LABEL + 'job'] = job
  return labels


def _metadata(plan, name, job=None):
  meta = {'name': name, 'labels': _labels(plan, job)}
  if plan.args.namespace:
    meta['namespace'] = plan.args.namespace
  return meta


# The hold: keep the pod (and its emptyDir) up after the run so `kubectl
# cp` can fetch the records; the exit code stays the run's. The shell is
# PID 1, which ignores a signal it has no handler for, so it forwards
# SIGTERM/SIGINT (kubelet's stop) to the run, which then records itself,
# and ends with it (a stopped pod is not held); a signal during the hold
# ends it. Nothing is interpolated but numbers: the command, its flags and
# the folder arrive as "$0", "$@" and the environment.
_HOLD_SCRIPT = (
    'pid=; trap \'stopped=1; kill -TERM $pid 2>/dev/null\' TERM INT; '
    '"$0" "$@" & pid=$!; '
    '[ -z "$stopped" ] || kill -TERM "$pid"; '
    'wait "$pid"; code=$?; '
    'while kill -0 "$pid" 2>/dev/null; do wait "$pid"; code=$?; done; '
    '[ -z "$stopped" ] || exit "$code"; '
    'trap \'exit "$code"\' TERM INT; '
    'echo "run ended (exit $code); records in $%s; this pod stays up %d s '
    'for kubectl cp"; '
    'sleep %d & wait $!; exit "$code"')
RESULT_DIR_ENV = 'TF_CNN_BENCHMARKS_RESULT_DIR'


def _security_context(plan):
  """The container's: nothing of root's powers (see the module doc)."""
  context = {'allowPrivilegeEscalation': False,
             'readOnlyRootFilesystem': True,
             'capabilities': {'drop': ['ALL']},
             'seccompProfile': {'type': 'RuntimeDefault'}}
  if plan.args.run_as_user:
    context.update(runAsNonRoot=True, runAsUser=plan.args.run_as_user,
                   runAsGroup=plan.args.run_as_user)
  return context


def _container(plan, job, env):
  command, args = [plan.args.command], list(plan.task_flags)
  env = list(env or []) + [{'name': 'HOME', 'value': TMP_DIR},
                           {'name': 'TMPDIR', 'value': TMP_DIR}]
  if plan.hold_seconds and plan.trains[job]:
    script = _HOLD_SCRIPT % (RESULT_DIR_ENV, plan.hold_seconds,
                             plan.hold_seconds)
    command, args = ['/bin/sh', '-c', script, plan.args.command], args
    env.append({'name': RESULT_DIR_ENV, 'value': plan.result_dir})
  resources = {'cpu': plan.args.cpu, 'memory': plan.args.memory}
  return {
      'name': CONTAINER,
      'image': plan.args.image,
      'command': command,
      'args': args,
      'env': env,
      'ports': [{'name': PORT_NAME, 'containerPort': plan.args.port}],
      'resources': {'requests': dict(resources), 'limits': dict(resources)},
      'securityContext': _security_context(plan),
      'volumeMounts': [{'name': RESULTS_VOLUME,
                        'mountPath': plan.result_dir},
                       {'name': TMP_VOLUME, 'mountPath': TMP_DIR}],
  }


def pod_template(plan, job, env=None, subdomain=None):
  if plan.args.results_pvc:
    volume = {'name': RESULTS_VOLUME, 'persistentVolumeClaim': {
        'claimName': plan.args.results_pvc}}
  else:
    volume = {'name': RESULTS_VOLUME, 'emptyDir': {}}
  spec = {'restartPolicy': 'Never',
          # A benchmark pod talks to no Kubernetes API.
          'automountServiceAccountToken': False,
          'containers': [_container(plan, job, env)],
          'volumes': [volume, {'name': TMP_VOLUME, 'emptyDir': {
              'sizeLimit': plan.args.tmp_size}}]}
  if plan.args.run_as_user:
    # The volumes are the run's group's to write.
    spec['securityContext'] = {'fsGroup': plan.args.run_as_user}
  if subdomain:
    spec['subdomain'] = subdomain
  return {'metadata': {'labels': _labels(plan, job)}, 'spec': spec}


def _tf_config_env(plan, job):
  """TF_CONFIG of a plain-form pod, its index read from the pod itself.

  Kubernetes expands $(VAR) in an env value from variables defined before
  it in the same list, so the index variable comes first.
  """
  marker = '"@INDEX@"'
  text = json.dumps({'cluster': plan.cluster(),
                     'task': {'type': job, 'index': '@INDEX@'}},
                    sort_keys=True)
  return [{'name': INDEX_ENV,
           'valueFrom': {'fieldRef': {'fieldPath': INDEX_ANNOTATION}}},
          {'name': tf_config.ENV,
           'value': text.replace(marker, '$(%s)' % INDEX_ENV)}]


def plain_objects(plan):
  service = {
      'apiVersion': 'v1', 'kind': 'Service',
      'metadata': _metadata(plan, plan.args.name),
      'spec': {
          'clusterIP': 'None',
          'selector': _labels(plan),
          # Names resolve before a pod is "ready" (it has no probes): a task
          # waits for its peers itself (--startup_timeout).
          'publishNotReadyAddresses': True,
          'ports': [{'name': PORT_NAME, 'port': plan.args.port,
                     'targetPort': plan.args.port}],
      },
  }
  jobs = [{
      'apiVersion': 'batch/v1', 'kind': 'Job',
      'metadata': _metadata(plan, plan.job_object_name(job), job),
      'spec': {
          'completionMode': 'Indexed',
          'completions': plan.counts[job],
          'parallelism': plan.counts[job],
          'backoffLimit': 0,
          'template': pod_template(plan, job, _tf_config_env(plan, job),
                                   subdomain=plan.args.name),
      },
  } for job in plan.jobs()]
  return [service] + jobs


def network_policy(plan):
  """Ingress to the run's pods from the run's pods only: TensorFlow's
  servers answer anyone who reaches their port."""
  return {
      'apiVersion': 'networking.k8s.io/v1', 'kind': 'NetworkPolicy',
      'metadata': _metadata(plan, plan.args.name + '-peers-only'),
      'spec': {
          'podSelector': {'matchLabels': _labels(plan)},
          'policyTypes': ['Ingress'],
          'ingress': [{'from': [{'podSelector': {
              'matchLabels': _labels(plan)}}]}],
      },
  }


def tfjob_object(plan):
  return {
      'apiVersion': 'kubeflow.org/v1', 'kind': 'TFJob',
      'metadata': _metadata(plan, plan.args.name),
      'spec': {
          # Keep finished pods, for their logs (and a held pod's records).
          'runPolicy': {'backoffLimit': 0, 'cleanPodPolicy': 'None'},
          'tfReplicaSpecs': {
              _TFJOB_REPLICA[job]: {
                  'replicas': plan.counts[job],
                  'restartPolicy': 'Never',
                  'template': pod_template(plan, job),
              } for job in plan.jobs()},
      },
  }


def objects(args, benchmark_flags):
  """Every object of the run; UsageError for bad arguments or flags."""
  _check_args(args)
  chosen = read_benchmark_flags(benchmark_flags)
  plan = Plan(args, benchmark_flags, chosen)
  return (plain_objects(plan) if args.form == PLAIN
          else [tfjob_object(plan)]) + [network_policy(plan)]


def write(found, output_dir, out):
  if not output_dir:
    json.dump({'apiVersion': 'v1', 'kind': 'List', 'items': found}, out,
              indent=2)
    out.write('\n')
    return
  os.makedirs(output_dir, exist_ok=True)
  for i, obj in enumerate(found):
    path = os.path.join(output_dir, '%02d-%s-%s.json' % (
        i, obj['kind'].lower(), obj['metadata']['name']))
    atomic_files.write_text_atomically(path, json.dumps(obj, indent=2) + '\n')
    out.write('wrote %s\n' % path)


def main(argv):
  own, benchmark_flags = cluster_command.split_at_dashes(argv)
  parser = make_parser()
  try:
    args, unknown = parser.parse_known_args(own)
  except SystemExit as e:
    return exit_codes.USAGE if e.code else exit_codes.OK
  try:
    if unknown:
      raise flags.UsageError(
          '%s: not a k8s option. Benchmark flags go after "--": '
          'tf_cnn_benchmarks k8s --image IMAGE ... -- --model=...'
          % ' '.join(unknown))
    found = objects(args, benchmark_flags)
  except flags.UsageError as e:
    return flags.report_usage_error(str(e))
  write(found, args.output_dir, sys.stdout)
  return exit_codes.OK
