"""Where `launch --hosts`/`--hostfile` puts each task, and bad host input."""

import subprocess
import sys

import pytest

from tests.driver_helpers import REPO, SCRIPT
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.cluster.launch import launcher
from tf_cnn_benchmarks.cluster.launch import ssh_hosts
from tf_cnn_benchmarks.cluster import deadlines


def _placed(hosts, ps, workers):
  tasks = [('ps', i) for i in range(ps)] + [
      ('worker', i) for i in range(workers)]
  placed = ssh_hosts.place(hosts, tasks)
  found = ssh_hosts.addresses(placed, tasks, 2222)
  return {'%s%d' % t: found[t] for t in tasks}


def test_ps_spread_first_then_workers_fill_free_slots_then_go_round():
  hosts = [ssh_hosts.parse_host(h) for h in ('h1', 'bob@h2:2022', 'h3')]
  assert str(hosts[1]) == 'bob@h2:2022'
  assert (hosts[1].user, hosts[1].name, hosts[1].ssh_port) == (
      'bob', 'h2', 2022)
  assert _placed(hosts, 2, 4) == {
      'ps0': 'h1:2222', 'ps1': 'h2:2222', 'worker0': 'h3:2222',
      'worker1': 'h1:2223', 'worker2': 'h2:2223', 'worker3': 'h3:2223'}


def test_hostfile_slots(tmp_path):
  path = tmp_path / 'hosts'
  path.write_text('# two big hosts\na slots=3\n\nb slots=2  # smaller\n')
  hosts = ssh_hosts.read_hostfile(str(path))
  assert [(h.name, h.slots) for h in hosts] == [('a', 3), ('b', 2)]
  assert _placed(hosts, 1, 4) == {
      'ps0': 'a:2222', 'worker0': 'a:2223', 'worker1': 'a:2224',
      'worker2': 'b:2222', 'worker3': 'b:2223'}


def test_bad_hostfile_line_is_named(tmp_path):
  path = tmp_path / 'hosts'
  path.write_text('a slots=2\nb cpus=4\n')
  with pytest.raises(flags.UsageError, match=r'line 2: "cpus=4" is not '
                     r'slots=N'):
    ssh_hosts.read_hostfile(str(path))


def test_bad_host_is_named():
  with pytest.raises(flags.UsageError, match=r'"a@b@c" is not '
                     r'\[user@\]host\[:ssh_port\]'):
    ssh_hosts.parse_host('a@b@c')


def test_a_host_name_starting_with_a_dash_is_refused_before_ssh_runs(
    tmp_path):
  """`--hosts=-oProxyCommand=...` would be an ssh option, and ssh would run
  the command: refused as a usage error (exit 2), ssh never started."""
  marker = tmp_path / 'ran'
  script = tmp_path / 'proxy.sh'
  script.write_text('#!/bin/sh\ntouch %s\n' % marker)
  script.chmod(0o755)
  hostfile = tmp_path / 'hosts'
  hostfile.write_text('-oProxyCommand=%s slots=2\n' % script)
  for hosts in (['--hosts=-oProxyCommand=%s' % script],
                ['--hostfile', str(hostfile)]):
    done = subprocess.run(
        [sys.executable, SCRIPT, 'launch'] + hosts + [
            '--workers', '1', '--ssh_connect_timeout', '2', '--',
            '--model=trivial', '--variable_update=collective_all_reduce'],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert not marker.exists(), done.stdout + done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    error = done.stderr.strip()
    assert error.startswith('Error: Host "-oProxyCommand=') and (
        'starts with "-"' in error) and '\n' not in error, error


def test_ssh_commands_end_options_before_the_host():
  args = launcher.make_parser().parse_args(
      ['--hosts', 'h', '--ssh_option', 'Port=2022'])
  ssh = ssh_hosts.Ssh(args)
  host = ssh_hosts.Host('h1', 'alice', 2022)
  for argv in (ssh.task_argv(host, ['--model=trivial']),
               ssh.reap_argv(host)(42, 'ab' * 8), ssh.argv(host, ['x'])):
    assert argv[-3:-1] == ['--', 'h1'], argv
    assert argv.index('--') > argv.index('Port=2022'), argv


def test_a_task_s_ssh_waits_out_a_silence_as_long_as_the_run_s_own_bounds():
  """The keep-alives of a task's connection last as long as a task may take
  to end by itself: a network drop the run survives does not end it."""
  args = launcher.make_parser().parse_args(['--hosts', 'h'])
  chosen = launcher.read_benchmark_flags(
      ['--model=trivial', '--variable_update=parameter_server',
       '--stall_timeout=40', '--stall_shutdown_timeout=20'])
  tasks = launcher.build_tasks(args, ['--model=trivial',
                                      '--variable_update=parameter_server',
                                      '--stall_timeout=40',
                                      '--stall_shutdown_timeout=20'], chosen)
  bound = deadlines.lost_peer_end_seconds(chosen)
  assert bound > 60
  argv = tasks[0].argv
  interval = int(argv[argv.index('ServerAliveInterval=5')].split('=')[1])
  count = int([a for a in argv if a.startswith('ServerAliveCountMax=')][0]
              .split('=')[1])
  assert interval * count >= bound > interval * (count - 1), argv
  # The checks before starting keep the short bound.
  short = ssh_hosts.Ssh(args).argv(ssh_hosts.Host('h', None, None), ['x'])
  assert 'ServerAliveCountMax=3' in short
