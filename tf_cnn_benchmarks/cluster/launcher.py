"""`tf_cnn_benchmarks launch`: a whole cluster on this machine, one command.

  tf_cnn_benchmarks launch --ps 1 --workers 2 -- --model=resnet50 ...

Starts every task (ps tasks, workers, and the controller for
distributed_all_reduce) as a subprocess on free 127.0.0.1 ports, with the
benchmark flags after `--` plus each task's --job_name/--task_index and the
host lists. Every task's output is shown line by line, prefixed with its
name ([ps0], [worker1], ...). At the end it prints a cluster summary.

Teardown is unconditional: on success, failure, Ctrl-C or SIGTERM every
child is stopped (SIGTERM to its process group, SIGKILL after a grace
period), and each child is also tied to the launcher's life by
PR_SET_PDEATHSIG, so even a SIGKILLed launcher leaves no orphans on Linux.
"""

import argparse
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster import server
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.cluster import peer_failures
from tf_cnn_benchmarks import flags
from tf_cnn_benchmarks import logs
from tf_cnn_benchmarks.variable_update import modes

# Flags the launcher sets for every task; the user must not.
_LAUNCHER_FLAGS = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts',
                   'controller_host', 'cluster_spec', 'cluster_run_id')
# After the first task fails, the others get this long to finish by
# themselves (a synchronous peer may be blocked) before being stopped.
FAILURE_GRACE_SECONDS = 10.0
# SIGTERM, then this long, then SIGKILL.
KILL_GRACE_SECONDS = 5.0

_OWN_RATE = re.compile(r'^worker(\d+) images/sec: ([0-9.]+)')
_CLUSTER_RATE = re.compile(r'^cluster images/sec: ([0-9.]+)')
_TOTAL = re.compile(r'^total images/sec: ([0-9.]+)')


def make_parser():
  parser = argparse.ArgumentParser(
      prog='tf_cnn_benchmarks launch',
      description='Run a cluster (ps tasks, workers, controller) as local '
                  'processes on free 127.0.0.1 ports. Benchmark flags go '
                  'after "--".',
      epilog='Example: tf_cnn_benchmarks launch --ps 1 --workers 2 -- '
             '--model=trivial --device=cpu --variable_update='
             'parameter_server --num_batches=20')
  parser.add_argument('--ps', type=int, default=None,
                      help='ps tasks (default: 1 for parameter_server and '
                           'distributed_replicated, 0 for the all-reduce '
                           'modes)')
  parser.add_argument('--workers', type=int, default=2, help='workers')
  parser.add_argument('--host', default='127.0.0.1',
                      help='address every task listens on')
  parser.add_argument('--ps_exit_grace', type=float, default=30.0,
                      help='seconds the serving tasks get to exit by '
                           'themselves once training ended, before they '
                           'are stopped')
  parser.add_argument('--timeout', type=float, default=0,
                      help='stop the whole cluster after this many seconds '
                           '(0: no limit)')
  return parser


def free_ports(host, count):
  """``count`` distinct free TCP ports on ``host``.

  All sockets stay bound until every port is chosen, so no port is handed
  out twice; another process may still take one before a task binds it (a
  task then fails to start, and the launcher reports it).
  """
  sockets = []
  try:
    for _ in range(count):
      s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      s.bind((host, 0))
      sockets.append(s)
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


class Task:
  """One child process and what it printed."""

  def __init__(self, label, job, address, argv):
    self.label = label
    self.job = job
    self.address = address
    self.argv = argv
    self.process = None
    self.lines = []
    self.reader = None
    self.stopped_by_launcher = False
    # When the launcher first saw it exited (time.monotonic()).
    self.exited_at = None
    # Does every step need every worker (role.lockstep)?
    self.lockstep = True

  @property
  def trains(self):
    return self.job in (roles.WORKER, roles.CONTROLLER)

  def returncode(self):
    code = self.process.poll() if self.process else None
    if code is not None and self.exited_at is None:
      self.exited_at = time.monotonic()
    return code

  def failed(self):
    """Exited with an error of its own (not stopped by the launcher)."""
    code = self.returncode()
    return code not in (None, 0) and not self.stopped_by_launcher


def _die_with_parent():
  """Runs in the child before exec: SIGKILL it when the launcher dies."""
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
  except (OSError, AttributeError):
    pass


def _child_env():
  env = dict(os.environ)
  # The task imports this package even when it is not installed.
  package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  env['PYTHONPATH'] = os.pathsep.join(
      [package_root] + [p for p in env.get('PYTHONPATH', '').split(
          os.pathsep) if p])
  env['PYTHONUNBUFFERED'] = '1'
  return env


class Launcher:

  def __init__(self, tasks, out=None):
    self.tasks = tasks
    self.out = out or sys.stdout
    self.lock = threading.Lock()
    self.stop_signal = None

  def say(self, text):
    with self.lock:
      self.out.write('[launch] %s\n' % text)
      self.out.flush()

  def _pump(self, task):
    for raw in task.process.stdout:
      line = raw.decode(errors='replace').rstrip('\n')
      task.lines.append(line)
      with self.lock:
        try:
          self.out.write('[%s] %s\n' % (task.label, line))
          self.out.flush()
        except (OSError, ValueError):
          # Our own output is gone (e.g. a closed pipe): keep draining the
          # task's, or it would block on a full pipe.
          pass

  def start(self):
    env = _child_env()
    for task in self.tasks:
      task.process = subprocess.Popen(
          task.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
          stdin=subprocess.DEVNULL, env=env, start_new_session=True,
          preexec_fn=_die_with_parent)
    # Readers start after every fork: forking with threads running is what
    # preexec_fn must not do.
    for task in self.tasks:
      task.reader = threading.Thread(target=self._pump, args=(task,),
                                     daemon=True)
      task.reader.start()

  def handle_signal(self, signum, frame):
    del frame
    self.stop_signal = signal.Signals(signum).name

  def wait(self, ps_exit_grace, timeout):
    """Waits for the run to end; returns a reason when it had to stop it."""
    started = time.monotonic()
    first_failure = None
    trainers_done_at = None
    while True:
      if self.stop_signal:
        return 'stopped by %s' % self.stop_signal
      now = time.monotonic()
      if timeout and now - started > timeout:
        return '--timeout of %.0f s reached' % timeout
      codes = {t.label: t.returncode() for t in self.tasks}
      if all(c is not None for c in codes.values()):
        return None
      if first_failure is None and self._cluster_cannot_go_on():
        first_failure = now
        first = first_failure_of(self.tasks)
        self.say('%s failed first (%s); the others get %.0f s to finish' % (
            first.label, _exit_description(first), FAILURE_GRACE_SECONDS))
      if first_failure is not None and (
          now - first_failure > FAILURE_GRACE_SECONDS):
        return 'a task failed; stopping the others'
      trainers = [t for t in self.tasks if t.trains]
      if trainers_done_at is None and all(
          t.returncode() is not None for t in trainers):
        trainers_done_at = now
      if trainers_done_at is not None and (
          now - trainers_done_at > ps_exit_grace):
        return ('serving task(s) still running %.0f s after training '
                'ended' % ps_exit_grace)
      time.sleep(0.1)

  def _cluster_cannot_go_on(self):
    """Has a task failed that the others cannot train without?

    Asynchronous parameter-server training carries on without a worker
    (the survivors report it and finish); anything else needs every task.
    """
    if all(t.returncode() is not None for t in self.tasks if t.trains):
      return False  # Training is over; the serving tasks just leave.
    failed = [t for t in self.tasks if t.failed()]
    return any(t.lockstep or t.job != roles.WORKER for t in failed)

  def teardown(self):
    """Stops every child still running: SIGTERM, grace, SIGKILL."""
    running = [t for t in self.tasks if t.process and t.returncode() is None]
    for task in running:
      task.stopped_by_launcher = True
      _kill_group(task.process, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    for task in running:
      try:
        task.process.wait(max(0.0, deadline - time.monotonic()))
      except subprocess.TimeoutExpired:
        pass
    for task in running:
      if task.returncode() is None:
        _kill_group(task.process, signal.SIGKILL)
        task.process.wait()
    for task in self.tasks:
      if task.reader:
        task.reader.join(timeout=2)


def _kill_group(process, sig):
  try:
    os.killpg(process.pid, sig)
  except (ProcessLookupError, PermissionError):
    pass


def _last_match(pattern, lines):
  value = None
  for line in lines:
    m = pattern.match(line)
    if m:
      value = m.groups()
  return value


def summarize(tasks, write):
  """Prints the cluster summary; returns the summed own rates (or None)."""
  write('=' * 10 + ' cluster summary ' + '=' * 10)
  own_rates = []
  chief_total = controller_total = None
  for task in tasks:
    code = task.returncode()
    state = ('stopped by the launcher' if task.stopped_by_launcher
             else _exit_description(task))
    detail = ''
    own = _last_match(_OWN_RATE, task.lines)
    if own:
      own_rates.append(float(own[1]))
      detail = '  own images/sec: %s' % own[1]
    chief = _last_match(_CLUSTER_RATE, task.lines)
    if chief:
      chief_total = float(chief[0])
    if task.job == roles.CONTROLLER:
      total = _last_match(_TOTAL, task.lines)
      controller_total = float(total[0]) if total else None
    if task.job == roles.PS and code == 0 and not task.stopped_by_launcher:
      detail = '  (exited by itself)'
    write('%-12s %s%s' % (task.label, state, detail))
  summed = None
  if controller_total is not None:
    write('Cluster total images/sec: %.2f (the controller\'s total: one '
          'graph over every worker)' % controller_total)
    summed = controller_total
  elif own_rates:
    summed = sum(own_rates)
    write('Cluster total images/sec: %.2f (sum of the %d workers\' own '
          'rates)' % (summed, len(own_rates)))
  if chief_total is not None and controller_total is None:
    write('Chief\'s estimate from the global step: %.2f images/sec'
          % chief_total)
  first = first_failure_of(tasks)
  if first is not None:
    for line in describe_first_failure(first):
      write(line)
  return summed


def _exit_description(task):
  code = task.returncode()
  if code is not None and code < 0:
    return 'killed by %s' % signal.Signals(-code).name
  return 'exit %s' % code


def first_failure_of(tasks):
  """The task that failed first, or None.

  The earliest to exit with an error, unless its output names another
  task as the root cause (a secondary failure may exit a moment before
  the failure it reports, e.g. a worker whose peer failed).
  """
  failed = sorted((t for t in tasks if t.failed()),
                  key=lambda t: t.exited_at)
  if not failed:
    return None
  named = _last_match(failures.ROOT_CAUSE_RE, failed[0].lines)
  by_label = {t.label: t for t in tasks}
  if named and named[0] in by_label:
    return by_label[named[0]]
  return failed[0]


def describe_first_failure(task):
  """Lines naming the first failure: the task's own error, or its death."""
  own = [l for l in task.lines
         if l.startswith(('Run failed: ', 'Run stalled: ', 'Hint: '))]
  code = task.returncode()
  if not own and code is not None and code < 0:
    return ['First failure: ' + peer_failures.killed_by_signal(task.label, -code)]
  if not own:
    return ['First failure: %s (%s; it printed no error)' % (
        task.label, _exit_description(task))]
  first, hints = own[0], [l for l in own[1:] if l.startswith('Hint: ')]
  return ['First failure: %s: %s' % (task.label, first.split(': ', 1)[1])
          ] + hints[:1]


def _exit_code(tasks):
  """The first failure's code (a task killed by a signal: RUN_FAILED)."""
  first = first_failure_of(tasks)
  if first is not None:
    code = first.returncode()
    return code if code and code > 0 else exit_codes.RUN_FAILED
  if any(t.stopped_by_launcher for t in tasks):
    return exit_codes.RUN_FAILED
  return exit_codes.OK


def _flag_value(argv, name, default):
  """The last --name=value (or --name value) in argv, else default."""
  value = default
  for i, arg in enumerate(argv):
    if arg.startswith('--%s=' % name):
      value = arg.split('=', 1)[1]
    elif arg == '--' + name and i + 1 < len(argv):
      value = argv[i + 1]
  return value


def build_tasks(args, benchmark_flags, python=None):
  """Task list with full command lines; UsageError for a bad combination."""
  python = python or sys.executable
  given = {a.split('=', 1)[0].lstrip('-') for a in benchmark_flags
           if a.startswith('--')}
  clash = sorted(given & set(_LAUNCHER_FLAGS))
  if clash:
    raise flags.UsageError(
        'The launcher sets %s for every task itself; remove %s from the '
        'benchmark flags.' % (', '.join('--' + f for f in _LAUNCHER_FLAGS),
                              ', '.join('--' + f for f in clash)))
  name = _flag_value(benchmark_flags, 'variable_update',
                     flags.SPECS_BY_NAME['variable_update'].default)
  mode = modes.MODES.get(name)
  if mode is None or not mode.runs_in_cluster:
    raise flags.UsageError(
        'The launcher runs a cluster: give --variable_update=one of %s '
        '(it was %s).' % (', '.join(modes.names(runs_in_cluster=True)),
                          name))
  num_ps = args.ps if args.ps is not None else int(mode.has_ps_tasks)
  if args.workers < 1 or num_ps < 0:
    raise flags.UsageError('--workers must be >= 1 and --ps >= 0.')
  with_controller = mode.needs_controller
  ports = free_ports(args.host, num_ps + args.workers + int(with_controller))
  address = ['%s:%d' % (args.host, p) for p in ports]
  ps_hosts = address[:num_ps]
  worker_hosts = address[num_ps:num_ps + args.workers]
  cluster_flags = ['--ps_hosts=' + ','.join(ps_hosts),
                   '--worker_hosts=' + ','.join(worker_hosts),
                   '--cluster_run_id=' + uuid.uuid4().hex]
  if with_controller:
    cluster_flags.append('--controller_host=' + address[-1])
  tasks_by_job = ([(roles.PS, i) for i in range(num_ps)] +
                  [(roles.WORKER, i) for i in range(args.workers)] +
                  ([(roles.CONTROLLER, 0)] if with_controller else []))
  tasks = []
  for job, index in tasks_by_job:
    task_flags = list(benchmark_flags) + cluster_flags + [
        '--job_name=' + job, '--task_index=%d' % index]
    # Every task's flags are checked here, so a bad cluster is one message
    # from the launcher rather than one per task.
    task_params, _ = flags.parse_command_line(['launch'] + task_flags)
    role = roles.resolve_role(task_params)
    task = Task(roles.task_label(job, index), job,
                roles.task_address(role, job, index),
                [python, '-m', 'tf_cnn_benchmarks.cli'] + task_flags)
    task.lockstep = role.lockstep
    tasks.append(task)
  return tasks


def main(argv):
  argv = list(argv)
  own, benchmark_flags = argv[1:], []
  if '--' in own:
    cut = own.index('--')
    own, benchmark_flags = own[:cut], own[cut + 1:]
  parser = make_parser()
  if any(a in ('-h', '--help') for a in own):
    parser.print_help()
    return exit_codes.OK
  try:
    args = parser.parse_args(own)
  except SystemExit as e:
    return exit_codes.USAGE if e.code else exit_codes.OK
  try:
    tasks = build_tasks(args, benchmark_flags)
    protocol = _flag_value(benchmark_flags, 'server_protocol', 'grpc')
    if protocol != 'grpc':
      # One message here rather than one per task (loads TensorFlow).
      verbosity = int(_flag_value(benchmark_flags, 'verbosity', '0'))
      logs.configure_before_tensorflow(verbosity)
      logs.import_tensorflow_quietly(verbosity)
      server.check_protocol(protocol)
  except flags.UsageError as e:
    return flags.report_usage_error(str(e))
  launcher = Launcher(tasks)
  previous = {sig: signal.signal(sig, launcher.handle_signal)
              for sig in (signal.SIGINT, signal.SIGTERM)}
  try:
    launcher.say('cluster: %s' % ', '.join(
        '%s %s' % (t.label, t.address) for t in tasks))
    launcher.start()
    launcher.say('started %s' % ', '.join(
        '%s (pid %d)' % (t.label, t.process.pid) for t in tasks))
    stopped = launcher.wait(args.ps_exit_grace, args.timeout)
    if stopped:
      launcher.say('stopping the cluster: %s' % stopped)
  finally:
    launcher.teardown()
    for sig, handler in previous.items():
      signal.signal(sig, handler)
  summarize(tasks, launcher.say)
  if launcher.stop_signal:
    return exit_codes.INTERRUPTED
  return _exit_code(tasks)
