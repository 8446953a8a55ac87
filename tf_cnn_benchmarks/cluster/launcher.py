"""`tf_cnn_benchmarks launch`: a whole cluster on this machine, one command.

  tf_cnn_benchmarks launch --ps 1 --workers 2 -- --model=resnet50 ...

Starts every task (ps tasks, workers, and the controller for
distributed_all_reduce) as a subprocess on free 127.0.0.1 ports, with the
benchmark flags after `--` plus each task's --job_name/--task_index and the
host lists. Every task's output is shown line by line, prefixed with its
name ([ps0], [worker1], ...). At the end it prints a cluster summary.

This file is the command: its arguments and the task list. Running and
stopping the children is task_processes.py; the summary and the exit code
are launch_summary.py.
"""

import argparse
import signal
import socket
import sys
import uuid

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import flag_checks
from tf_cnn_benchmarks import flags
from tf_cnn_benchmarks import logs
from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster import launch_summary
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster import server
from tf_cnn_benchmarks.cluster import task_processes
from tf_cnn_benchmarks.variable_update import modes

# Flags the launcher sets for every task; the user must not.
_LAUNCHER_FLAGS = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts',
                   'controller_host', 'cluster_spec', 'cluster_run_id')


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


def read_benchmark_flags(benchmark_flags):
  """The flags after `--`, parsed as every task will parse them.

  UsageError for a flag the launcher sets itself, or a flag that is bad on
  its own. Checks across flags wait for build_tasks: they depend on each
  task's place in the cluster.
  """
  given = {a.split('=', 1)[0].lstrip('-') for a in benchmark_flags
           if a.startswith('--')}
  clash = sorted(given & set(_LAUNCHER_FLAGS))
  if clash:
    raise flags.UsageError(
        'The launcher sets %s for every task itself; remove %s from the '
        'benchmark flags.' % (', '.join('--' + f for f in _LAUNCHER_FLAGS),
                              ', '.join('--' + f for f in clash)))
  return flags.parse_flag_values(['launch'] + list(benchmark_flags))


def build_tasks(args, benchmark_flags, chosen, python=None):
  """Task list with full command lines; UsageError for a bad combination.

  ``chosen`` is read_benchmark_flags(benchmark_flags).
  """
  python = python or sys.executable
  flag_checks.check_not_refused(flags.SPECS_BY_NAME['variable_update'],
                                chosen.variable_update)
  mode = modes.get(chosen.variable_update)
  if not mode.runs_in_cluster:
    raise flags.UsageError(
        'The launcher runs a cluster: give --variable_update=one of %s '
        '(it was %s).' % (', '.join(modes.names(runs_in_cluster=True)),
                          chosen.variable_update))
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
    task = task_processes.Task(
        roles.task_label(job, index), job, roles.task_address(role, job, index),
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
    args, unknown = parser.parse_known_args(own)
  except SystemExit as e:
    return exit_codes.USAGE if e.code else exit_codes.OK
  if unknown:
    # Benchmark flags typed before "--" (or a misspelt launcher option).
    return flags.report_usage_error(
        '%s: %s. Benchmark flags go after "--": tf_cnn_benchmarks launch '
        '%s-- %s' % (
            ' '.join(unknown), 'not a launcher option' if len(unknown) == 1
            else 'not launcher options',
            ''.join(a + ' ' for a in own if a not in unknown),
            ' '.join(unknown + benchmark_flags)))
  try:
    chosen = read_benchmark_flags(benchmark_flags)
    tasks = build_tasks(args, benchmark_flags, chosen)
    if chosen.server_protocol != 'grpc':
      # One message here rather than one per task (loads TensorFlow).
      if not logs.load_tensorflow(chosen.verbosity):
        return exit_codes.RUN_FAILED
      server.check_protocol(chosen.server_protocol)
  except flags.UsageError as e:
    return flags.report_usage_error(str(e))
  launcher = task_processes.Supervisor(tasks)
  previous = {sig: signal.signal(sig, launcher.handle_signal)
              for sig in (signal.SIGINT, signal.SIGTERM)}
  try:
    launcher.say('cluster: %s' % ', '.join(
        '%s %s' % (t.label, t.address) for t in tasks))
    launcher.start()
    launcher.say('started %s' % ', '.join(
        '%s (pid %d)' % (t.label, t.process.pid) for t in tasks))
    stopped = launcher.wait(args.ps_exit_grace, args.timeout,
                            deadlines.lost_peer_end_seconds(chosen))
    if stopped:
      launcher.say('stopping the cluster: %s' % stopped)
  finally:
    launcher.teardown()
    for sig, handler in previous.items():
      signal.signal(sig, handler)
  launch_summary.summarize(tasks, launcher.say)
  if launcher.stop_signal:
    return exit_codes.INTERRUPTED
  return launch_summary.exit_code(tasks)
