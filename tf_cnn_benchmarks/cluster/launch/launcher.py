"""`tf_cnn_benchmarks launch`: a whole cluster, one command.

  tf_cnn_benchmarks launch --ps 1 --workers 2 -- --model=resnet50 ...
  tf_cnn_benchmarks launch --hosts h1,h2,h3 --ps 1 --workers 2 -- ...

Starts every task (ps tasks, workers, and the controller for
distributed_all_reduce) as a subprocess on free 127.0.0.1 ports, or with
--hosts/--hostfile on those hosts over ssh, with the benchmark flags after
`--` plus each task's --job_name/--task_index and the host lists. Every
task's output is shown line by line, prefixed with its name ([ps0],
[worker1], ...). At the end it prints a cluster summary.

This file is the command: its arguments and the task list. Running and
stopping the children is task_processes.py; the summary and the exit code
are launch_summary.py; placing tasks on hosts, checking the hosts and the
ssh commands are ssh_hosts.py.
"""

import argparse
import os
import signal
import socket
import sys
import uuid

from results import record_io
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.process import logs
from tf_cnn_benchmarks.cluster.launch import cluster_command
from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster.launch import launch_summary
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster import server
from tf_cnn_benchmarks.cluster.launch import ssh_hosts
from tf_cnn_benchmarks.cluster.launch import task_processes
from tf_cnn_benchmarks.liveness import stop_request

def make_parser():
  parser = argparse.ArgumentParser(
      prog='tf_cnn_benchmarks launch',
      description='Run a cluster (ps tasks, workers, controller) as local '
                  'processes on free 127.0.0.1 ports, or on other hosts '
                  'over ssh (--hosts). Benchmark flags go after "--".',
      epilog='Example: tf_cnn_benchmarks launch --ps 1 --workers 2 -- '
             '--model=trivial --device=cpu --variable_update='
             'parameter_server --num_batches=20')
  cluster_command.add_size_arguments(parser)
  parser.add_argument('--host', default='127.0.0.1',
                      help='host name or address of this machine that '
                           'the tasks reach each other at (it goes into '
                           'the cluster spec). Not a bind address: '
                           'TensorFlow\'s servers listen on every '
                           'interface whatever it says (docs/cluster.md, '
                           '"Trusted network only")')
  parser.add_argument('--ps_exit_grace', type=float, default=30.0,
                      help='seconds the serving tasks get to exit by '
                           'themselves once training ended, before they '
                           'are stopped')
  parser.add_argument('--timeout', type=float, default=0,
                      help='stop the whole cluster after this many seconds '
                           '(0: no limit)')
  ssh_hosts.add_arguments(parser)
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
  """The flags after `--`, parsed as every task will parse them."""
  return cluster_command.read_benchmark_flags(
      'launch', benchmark_flags,
      'The launcher sets %s for every task itself' % ', '.join(
          '--' + f for f in cluster_command.SET_FOR_EVERY_TASK))


def build_tasks(args, benchmark_flags, chosen, python=None):
  """Task list with full command lines; UsageError for a bad combination.

  ``chosen`` is read_benchmark_flags(benchmark_flags).
  """
  python = python or sys.executable
  mode = cluster_command.cluster_mode('The launcher', chosen)
  num_ps = cluster_command.num_ps_tasks(args, mode)
  with_controller = roles.has_controller(mode, chosen.engine)
  tasks_by_job = ([(roles.PS, i) for i in range(num_ps)] +
                  [(roles.WORKER, i) for i in range(args.workers)] +
                  ([(roles.CONTROLLER, 0)] if with_controller else []))
  hosts = ssh_hosts.hosts_of(args)
  if hosts:
    placed = ssh_hosts.place(hosts, tasks_by_job)
    found = ssh_hosts.addresses(placed, tasks_by_job, args.base_port)
    address = [found[t] for t in tasks_by_job]
  else:
    ports = free_ports(args.host, len(tasks_by_job))
    address = ['%s:%d' % (args.host, p) for p in ports]
  ps_hosts = address[:num_ps]
  worker_hosts = address[num_ps:num_ps + args.workers]
  cluster_flags = ['--ps_hosts=' + ','.join(ps_hosts),
                   '--worker_hosts=' + ','.join(worker_hosts),
                   '--cluster_run_id=' + uuid.uuid4().hex]
  if with_controller:
    cluster_flags.append('--controller_host=' + address[-1])
  ssh = (ssh_hosts.Ssh(args, deadlines.lost_peer_end_seconds(chosen))
         if hosts else None)
  tasks = []
  for job, index in tasks_by_job:
    task_flags = list(benchmark_flags) + cluster_flags + [
        '--job_name=' + job, '--task_index=%d' % index]
    # Every task's flags are checked here, so a bad cluster is one message
    # from the launcher rather than one per task.
    task_params, _ = flags.parse_command_line(['launch'] + task_flags)
    role = roles.resolve_role(task_params)
    label = roles.task_label(job, index)
    address = roles.task_address(role, job, index)
    if ssh:
      host = placed[(job, index)]
      task = task_processes.RemoteTask(
          label, job, address, ssh.task_argv(host, task_flags), host,
          ssh.reap_argv(host))
    else:
      task = task_processes.Task(
          label, job, address,
          [python, '-m', 'tf_cnn_benchmarks.cli'] + task_flags)
    task.lockstep = role.lockstep
    tasks.append(task)
  return tasks


def _save_remote_records(tasks, result_dir, say):
  """The run records remote tasks sent back, into the local result_dir,
  each marked with the host its task ran on."""
  saved = 0
  for task in tasks:
    for name, rec in task.records:
      rec['launched_on'] = str(task.host)
      os.makedirs(result_dir, exist_ok=True)
      record_io.write_record_atomically(os.path.join(result_dir, name), rec)
      saved += 1
  if tasks:
    say('%d run record(s) from the hosts saved in %s' % (saved, result_dir))


def main(argv):
  own, benchmark_flags = cluster_command.split_at_dashes(argv)
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
    remote = [t for t in tasks if isinstance(t, task_processes.RemoteTask)]
    if chosen.server_protocol != 'grpc':
      # One message here rather than one per task (loads TensorFlow).
      if not logs.load_tensorflow(chosen.verbosity):
        return exit_codes.RUN_FAILED
      server.check_protocol(chosen.server_protocol)
  except flags.UsageError as e:
    return flags.report_usage_error(str(e))
  launcher = task_processes.Supervisor(tasks)
  if remote:
    launcher.say('placement: ' + '; '.join(
        '%s: %s' % (h, ', '.join('%s %s' % (t.label, t.address)
                                 for t in tasks if t.host == h))
        for h in dict.fromkeys(t.host for t in tasks)))
    try:
      ssh_hosts.preflight(ssh_hosts.Ssh(args), remote)
    except ssh_hosts.PreflightError as e:
      launcher.say(str(e))
      return e.exit_code
  previous = {sig: signal.signal(sig, launcher.handle_signal)
              for sig in stop_request.STOP_SIGNALS}
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
    unconfirmed = launcher.teardown()
    for sig, handler in previous.items():
      signal.signal(sig, handler)
  for label, why in unconfirmed.items():
    launcher.say('could not confirm %s is gone: %s' % (label, why))
  _save_remote_records(remote, chosen.result_dir, launcher.say)
  launch_summary.summarize(tasks, launcher.say)
  if launcher.stop_signal:
    return exit_codes.INTERRUPTED
  return launch_summary.exit_code(tasks)
