"""The cluster a task belongs to, and this task's place in it.

Reads the cluster from --ps_hosts/--worker_hosts/--controller_host, from
a --cluster_spec JSON file (plain {"ps": [...], "worker": [...]} or the
TF_CONFIG convention), or from the TF_CONFIG environment variable (the same
parser), checks it, and says what this task is: its job, its index,
whether it is the chief (worker 0, or the controller in
distributed_all_reduce), where its devices are and which peers its sessions
may see (device filters).

No TensorFlow here, so a bad host list is reported before TensorFlow loads
(and the launcher can use it).
"""

import dataclasses
import json
import os
from typing import Dict, List, Optional, Tuple

from tf_cnn_benchmarks.config import flag_specs
from tf_cnn_benchmarks.variable_update import sync_kind
from tf_cnn_benchmarks.config import tf_config
from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.config.usage_errors import UsageError
from tf_cnn_benchmarks.variable_update import modes

PS, WORKER, CONTROLLER = 'ps', 'worker', 'controller'
# The controller's job name in TensorFlow's cluster spec, under the tf2
# engine's ParameterServerStrategy.
TF2_COORDINATOR = 'chief'


@dataclasses.dataclass(frozen=True)
class ClusterRole:
  """This task's view of the cluster."""
  jobs: Dict[str, Tuple[str, ...]]   # job name -> host:port of each task
  job_name: str
  task_index: int
  protocol: str
  variable_update: str
  cross_replica_sync: bool
  # Deadline of one step and of every un-optioned call of a training
  # session (None: unbounded); see deadlines.step_deadline_seconds.
  step_deadline_seconds: Optional[float] = None
  # Session target of this task's own server (set once it is started).
  target: str = ''
  # 'ip:port' this task's server listens on, as the kernel has it (set
  # once it is started: server.measured_exposure).
  listens_on: Tuple[str, ...] = ()
  # --sync_updates: how a synchronous ps-mode cluster updates.
  sync_updates: str = 'mean'
  # --engine: which runtime trains (the tf2 engine has no controller).
  engine: str = flag_specs.GRAPH_ENGINE

  @property
  def num_workers(self):
    return len(self.jobs.get(WORKER, ()))

  @property
  def num_ps(self):
    return len(self.jobs.get(PS, ()))

  @property
  def task_name(self):
    """'worker1', 'ps0', 'controller0': how reports name tasks."""
    return task_label(self.job_name, self.task_index)

  @property
  def address(self):
    return self.jobs[self.job_name][self.task_index]

  @property
  def device(self):
    return '/job:%s/task:%d' % (self.job_name, self.task_index)

  @property
  def sync(self):
    """How the workers combine their updates (sync_kind.SyncKind)."""
    return sync_kind.of(self.cross_replica_sync, self.sync_updates)

  @property
  def mode(self):
    """The facts of this cluster's --variable_update (modes.Mode)."""
    return modes.get(self.variable_update)

  @property
  def in_graph(self):
    """One graph over every worker, run by the controller?"""
    return has_controller(self.mode, self.engine)

  @property
  def lockstep(self):
    """Does every training step need every worker (synchronous training)?

    Then one missing worker stops the whole cluster; asynchronous
    parameter-server training carries on without it. So does the tf2
    engine's ParameterServerStrategy, also with --sync_updates=barrier:
    its coordinator waits for a round of one step per worker, but runs a
    lost worker's steps on the others, so no step needs a given worker.
    """
    if self.mode.tf2_cluster_strategy == modes.PARAMETER_SERVER and (
        self.engine == flag_specs.TF2_ENGINE):
      return False
    return self.sync.synchronous or self.mode.all_reduce

  @property
  def is_chief(self):
    """The task that initialises shared state and writes checkpoints."""
    if self.in_graph:
      return self.job_name == CONTROLLER
    return self.job_name == WORKER and self.task_index == 0

  @property
  def trains(self):
    """Does this task build and run a training graph (vs. only serve)?"""
    if self.in_graph:
      return self.job_name == CONTROLLER
    return self.job_name == WORKER

  def serving_tasks(self):
    """Tasks that only serve variables/devices and wait to hear 'done'."""
    ps_tasks = [(PS, i) for i in range(self.num_ps)]
    if self.in_graph:
      return ps_tasks + [(WORKER, i) for i in range(self.num_workers)]
    return ps_tasks

  def can_train_without(self, label):
    """Can the cluster's training go on once task ``label`` is gone?

    Only a cluster not in lockstep without one of its workers: the graph
    engine's asynchronous workers step on alone, and ParameterServerStrategy's
    coordinator runs the steps on the workers left. Without a ps, or in
    lockstep, nobody can.
    """
    return not self.lockstep and label.startswith(WORKER)

  def clients(self):
    """Tasks that run training sessions (and so say 'done' when leaving)."""
    if self.in_graph:
      return [(CONTROLLER, 0)]
    return [(WORKER, i) for i in range(self.num_workers)]

  def device_filters(self):
    """Which tasks this task's sessions see.

    Without filters a session waits for, and talks to, every task of the
    cluster; a between-graph worker needs only the ps tasks and itself (and
    worker 0 in collective mode, where the start barrier lives).
    """
    if self.job_name == CONTROLLER:
      return ['/job:worker', self.device]
    if self.job_name == WORKER and not self.in_graph:
      if self.mode.uses_collectives:
        return sorted({self.device, '/job:worker/task:0'})
      return ['/job:ps', self.device]
    return [self.device]

  def _other_tasks(self):
    """(job, index, address) of every other task of the cluster."""
    return [(job, i, address)
            for job in (PS, WORKER, CONTROLLER)
            for i, address in enumerate(self.jobs.get(job, ()))
            if (job, i) != (self.job_name, self.task_index)]

  def all_peers(self):
    """{label: address} of every other task of the cluster."""
    return {task_label(job, i): address
            for job, i, address in self._other_tasks()}

  def session_peers(self):
    """{label: address} of every task this task's sessions talk to."""
    filters = self.device_filters()
    return {task_label(job, i): address
            for job, i, address in self._other_tasks()
            if '/job:%s' % job in filters or
            '/job:%s/task:%d' % (job, i) in filters}

  def placement(self, device_type, num_devices):
    """(tower devices, device of the global step, workers timed as one run).

    A worker's towers are its own devices. The controller's one graph has a
    tower on every device of every worker and times the cluster as a single
    run. The global step lives on ps 0 when there are ps tasks (all workers
    share it), else on the task running the graph.
    """
    def devices_of(task):
      return ['%s/device:%s:%d' % (task, device_type.upper(), i)
              for i in range(num_devices)]

    if self.job_name == CONTROLLER:
      towers = [d for w in range(self.num_workers)
                for d in devices_of('/job:worker/task:%d' % w)]
      return towers, self.device + '/device:CPU:0', 1
    towers = devices_of(self.device)
    if self.num_ps:
      return towers, '/job:ps/task:0/device:CPU:0', self.num_workers
    return towers, self.device + '/device:CPU:0', self.num_workers

  def tf_cluster_def(self):
    """The cluster as TensorFlow's ClusterSpec dict. The tf2 engine's
    controller is ParameterServerStrategy's coordinator, a job TensorFlow
    requires to be called "chief"."""
    renamed = {CONTROLLER: TF2_COORDINATOR} if (
        self.engine == flag_specs.TF2_ENGINE) else {}
    return {renamed.get(job, job): list(hosts)
            for job, hosts in self.jobs.items() if hosts}


def has_controller(mode, engine):
  """Does a cluster of ``mode`` (modes.Mode) run by ``engine`` have a
  controller task, which alone trains while the workers (and ps tasks)
  serve? The graph engine's in-graph modes: the controller runs one graph
  over every worker. With --engine=tf2, ParameterServerStrategy: the
  controller is its coordinator (TensorFlow's "chief"), which runs each
  step on a worker; MultiWorkerMirroredStrategy has none (every worker
  runs its own step)."""
  if engine == flag_specs.GRAPH_ENGINE:
    return mode.needs_controller
  return mode.tf2_cluster_strategy == modes.PARAMETER_SERVER


def parse_host_list(text, flag):
  """'h1:p1,h2:p2' -> ('h1:p1', 'h2:p2'); UsageError naming the bad entry."""
  hosts = tuple(h.strip() for h in text.split(',')) if text else ()
  for host in hosts:
    _check_address(host, flag)
  return hosts


def _check_address(host, where):
  name, sep, port = host.rpartition(':')
  if name.startswith('[') and name.endswith(']'):
    name = name[1:-1]  # [IPv6]:port
  if not sep or not name or not port.isdigit() or not 0 < int(port) < 65536:
    raise UsageError(
        '%s: %r is not host:port (e.g. 10.0.0.1:2222); every task needs a '
        'host name or address and a port between 1 and 65535, entries '
        'separated by commas.' % (where, host))


def _jobs_from_flags(params):
  jobs = {
      PS: parse_host_list(params.ps_hosts, '--ps_hosts'),
      WORKER: parse_host_list(params.worker_hosts, '--worker_hosts'),
      CONTROLLER: (parse_host_list(params.controller_host,
                                   '--controller_host')
                   if params.controller_host else ()),
  }
  if len(jobs[CONTROLLER]) > 1:
    raise UsageError(
        '--controller_host takes one host:port, not a list (%s).'
        % params.controller_host)
  return jobs, params.job_name, params.task_index


def _read_spec_file(path):
  if not os.path.isfile(path):
    raise UsageError(
        '--cluster_spec=%s: no such file. Give a JSON file like '
        '{"ps": ["host:port"], "worker": ["host:port", ...]}.' % path)
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError) as e:
    raise UsageError(
        '--cluster_spec=%s is not readable JSON (%s).' % (path, e))


def _host_tuple(value, where):
  if isinstance(value, str):
    value = [value]
  if not isinstance(value, list) or not all(isinstance(h, str)
                                            for h in value):
    raise UsageError(
        '%s must be a list of "host:port" strings.' % where)
  for host in value:
    _check_address(host, where)
  return tuple(value)


def _jobs_from_spec(params, spec, where):
  """Plain spec or TF_CONFIG form -> (jobs, job_name, task_index).

  ``where`` names the source in messages: '--cluster_spec=FILE' or
  'TF_CONFIG'. A TF_CONFIG ``chief`` is worker 0's role (the worker that
  initialises and saves), so chief -> worker 0 and TF_CONFIG's worker i ->
  worker i+1; without a chief the indexes are TF_CONFIG's own.
  """
  if not isinstance(spec, dict):
    raise UsageError('%s must hold a JSON object.' % where)
  tf_config_form = 'cluster' in spec
  cluster = spec['cluster'] if tf_config_form else spec
  if not isinstance(cluster, dict):
    raise UsageError('%s: "cluster" must be an object.' % where)
  unknown = sorted(set(cluster) - {PS, WORKER, CONTROLLER, 'chief'})
  if unknown:
    raise UsageError(
        '%s: unknown job(s) %s; jobs are ps, worker, controller (and chief '
        'in the TF_CONFIG form).' % (where, ', '.join(unknown)))
  chief = _host_tuple(cluster.get('chief', []), '%s: chief' % where)
  if len(chief) > 1:
    raise UsageError('%s: at most one chief.' % where)
  jobs = {job: _host_tuple(cluster.get(job, []), '%s: %s' % (where, job))
          for job in (PS, WORKER, CONTROLLER)}
  jobs[WORKER] = chief + jobs[WORKER]
  job_name, task_index = params.job_name, params.task_index
  task = spec.get('task') if tf_config_form else None
  if task is not None:
    if not isinstance(task, dict) or 'type' not in task:
      raise UsageError(
          '%s: "task" must be {"type": ..., "index": ...}.' % where)
    kind, index = task['type'], task.get('index', 0)
    if kind not in (PS, WORKER, CONTROLLER, 'chief') or not isinstance(
        index, int) or isinstance(index, bool):
      raise UsageError(
          '%s: task %s is not one of ps, worker, controller, chief with an '
          'integer index.' % (where, json.dumps(task)))
    ours = (WORKER, index) if kind == 'chief' else (
        (kind, index + 1) if kind == WORKER and chief else (kind, index))
    if (job_name or task_index) and (job_name or ours[0],
                                     task_index) != ours:
      raise UsageError(
          '--job_name=%s --task_index=%d contradict %s, whose task is %s %d '
          '(%s here); give the task once: drop the flags or change %s.' % (
              job_name or '(not given)', task_index, where, kind, index,
              task_label(*ours), where))
    job_name, task_index = ours
  return jobs, job_name, task_index


def _check_flags_agree(params, jobs):
  """Host flags given beside TF_CONFIG must list what it lists."""
  for flag, job in (('ps_hosts', PS), ('worker_hosts', WORKER),
                    ('controller_host', CONTROLLER)):
    given = getattr(params, flag)
    if given and parse_host_list(given, '--' + flag) != jobs[job]:
      raise UsageError(
          '--%s=%s contradicts %s, whose %s job is %s (a chief counts as '
          'worker 0); give the cluster once: drop --%s or unset %s.' % (
              flag, given, tf_config.ENV, job, ','.join(jobs[job]) or
              '(empty)', flag, tf_config.ENV))


def _jobs(params):
  """(jobs, job_name, task_index) from TF_CONFIG, a spec file or the flags."""
  env_spec = tf_config.read()
  if env_spec is not None:
    if params.cluster_spec:
      raise UsageError(
          '--cluster_spec=%s and %s both describe the cluster; give one '
          '(drop the flag or unset %s).' % (
              params.cluster_spec, tf_config.ENV, tf_config.ENV))
    jobs, job_name, task_index = _jobs_from_spec(params, env_spec,
                                                 tf_config.ENV)
    _check_flags_agree(params, jobs)
    return jobs, job_name, task_index
  if params.cluster_spec:
    if params.ps_hosts or params.worker_hosts or params.controller_host:
      raise UsageError(
          '--cluster_spec replaces --ps_hosts/--worker_hosts/'
          '--controller_host; give either the file or the host '
          'flags, not both.')
    return _jobs_from_spec(params, _read_spec_file(params.cluster_spec),
                           '--cluster_spec=%s' % params.cluster_spec)
  return _jobs_from_flags(params)


def resolve_role(params):
  """This task's ClusterRole from the flags; UsageError if inconsistent."""
  jobs, job_name, task_index = _jobs(params)
  mode = modes.get(params.variable_update)
  if not job_name:
    raise UsageError(
        'This task\'s job is not known: give --job_name (ps, '
        'worker or controller) and --task_index, or a "task" in '
        'TF_CONFIG or the TF_CONFIG-form --cluster_spec.')
  if not jobs[WORKER]:
    raise UsageError(
        'The cluster has no workers: give --worker_hosts (or '
        '"worker" in --cluster_spec).')
  if mode.has_ps_tasks and not jobs[PS]:
    raise UsageError(
        '--variable_update=%s keeps the variables on parameter '
        'servers: give --ps_hosts (or "ps" in --cluster_spec).'
        % mode.name)
  if not mode.has_ps_tasks and jobs[PS]:
    raise UsageError(
        '--variable_update=%s uses no parameter servers; drop '
        '--ps_hosts (or "ps" from --cluster_spec).' % mode.name)
  controller = has_controller(mode, params.engine)
  if controller and not jobs[CONTROLLER]:
    raise UsageError(
        '--variable_update=%s with --engine=%s is driven by a controller '
        'task (%s): give --controller_host (and start it with '
        '--job_name=controller).' % (
            mode.name, params.engine,
            'one graph over every worker' if params.engine ==
            flag_specs.GRAPH_ENGINE else 'ParameterServerStrategy\'s '
            'coordinator, TensorFlow\'s "chief"'))
  if not controller and (jobs[CONTROLLER] or job_name == CONTROLLER):
    raise UsageError(
        'A controller task only exists in --variable_update=%s with the '
        'graph engine, and in parameter_server with --engine=tf2 (this run '
        'is %s, --engine=%s); drop --controller_host / '
        '--job_name=controller.' % (
            ', '.join(modes.names(needs_controller=True)), mode.name,
            params.engine))
  hosts = jobs[job_name]
  if not 0 <= task_index < len(hosts):
    raise UsageError(
        '--task_index=%d is out of range: job %s has %d task(s) '
        '(%s), so the index must be 0..%d.' % (
        task_index, job_name, len(hosts), ','.join(hosts),
        len(hosts) - 1))
  every = [h for job in (PS, WORKER, CONTROLLER) for h in jobs[job]]
  repeated = sorted({h for h in every if every.count(h) > 1})
  if repeated:
    raise UsageError(
        'Two tasks share the address %s; every task needs its own '
        'host:port.' % ', '.join(repeated))
  return ClusterRole(jobs=jobs, job_name=job_name, task_index=task_index,
                     protocol=params.server_protocol,
                     variable_update=mode.name,
                     cross_replica_sync=params.cross_replica_sync,
                     sync_updates=params.sync_updates,
                     engine=params.engine,
                     step_deadline_seconds=deadlines.step_deadline_seconds(
                         params))


def per_task_path(path, role):
  """Where this task writes a per-run file (--trace_file, --graph_file).

  The chief writes ``path`` itself; every other task puts its job and index
  before the extension (trace.json -> trace.worker1.json), so tasks sharing
  a machine or a network file system do not overwrite each other's files.
  """
  if role is None or role.is_chief:
    return path
  stem, ext = os.path.splitext(path)
  return '%s.%s%d%s' % (stem, role.job_name, role.task_index, ext)


def split_address(address):
  """'host:port' -> (host, port) for a socket; strips IPv6 brackets."""
  host, _, port = address.rpartition(':')
  return host.strip('[]'), int(port)


def task_address(role, job, index) -> Optional[str]:
  hosts = role.jobs.get(job, ())
  return hosts[index] if index < len(hosts) else None


def task_label(job, index):
  return '%s%d' % (job, index)


def describe(role) -> List[str]:
  """Lines naming every task, for the start of a task's output."""
  return ['%s: %s' % (task_label(job, i), host)
          for job in (PS, WORKER, CONTROLLER)
          for i, host in enumerate(role.jobs.get(job, ()))]
