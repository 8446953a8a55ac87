"""The ssh launcher's hosts: which tasks go where, the checks before any
starts, and the ssh commands that run them.

  tf_cnn_benchmarks launch --hosts h1,alice@h2:2022 --ps 1 --workers 2 -- ...
  tf_cnn_benchmarks launch --hostfile hosts.txt --ps 2 --workers 8 -- ...

A host is `[user@]host[:ssh_port]`; `host` is also the address the other
tasks reach its tasks at. A hostfile has one `host [slots=N]` per line
(`#` starts a comment). Placement: ps tasks are spread over the hosts in
turn (one per host, then round again), each taking a slot; workers then
fill the free slots host by host (a `--hosts` host has 1 slot), and go
round every slot again when there are more tasks than slots; a controller
goes on the first host. A host's
tasks listen on --base_port, --base_port+1, ... in that order.

Every ssh call is the real OpenSSH client in batch mode (no password
prompts) with a connect timeout and keep-alives, plus the user's
--ssh_config (-F) and --ssh_option (-o) settings; ~/.ssh/config applies as
usual. Each task runs over its own connection, under ssh_remote's guard.
"""

import concurrent.futures
import dataclasses
import json
import math
import re
import shlex
import subprocess
import sys

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.launch import ssh_remote
from tf_cnn_benchmarks.measure import versions

_HOST = re.compile(r'^(?:(?P<user>[^@\s:]+)@)?(?P<name>[^@\s:]+)'
                   r'(?::(?P<port>\d+))?$')
# Seconds a preflight may take once connected (it imports no TensorFlow).
_PREFLIGHT_SECONDS = 60


@dataclasses.dataclass(frozen=True)
class Host:
  name: str  # ssh's destination and the address other tasks use
  user: str = None
  ssh_port: int = None
  slots: int = 1

  def __str__(self):
    return '%s%s%s' % (self.user + '@' if self.user else '', self.name,
                       ':%d' % self.ssh_port if self.ssh_port else '')


def add_arguments(parser):
  """The launcher's options for running tasks on other hosts."""
  group = parser.add_argument_group(
      'other hosts (over ssh)',
      'With --hosts or --hostfile, every task runs on one of the hosts '
      'through OpenSSH; each host needs the same harness and TensorFlow '
      'as this one (see docs/cluster.md).')
  group.add_argument('--hosts', default=None,
                     help='comma-separated [user@]host[:ssh_port] list')
  group.add_argument('--hostfile', default=None,
                     help='file of "host [slots=N]" lines')
  group.add_argument('--base_port', type=int, default=2222,
                     help='first port the tasks of a host listen on')
  group.add_argument('--remote_python', default=sys.executable,
                     help='python on the hosts (default: this one\'s path)')
  group.add_argument('--remote_workdir', default=None,
                     help='folder to run in on the hosts (default: home)')
  group.add_argument('--ssh_config', default=None,
                     help='ssh config file (ssh -F)')
  group.add_argument('--ssh_option', action='append', default=[],
                     help='extra ssh -o option, e.g. Port=2022 (repeatable)')
  group.add_argument('--ssh_connect_timeout', type=int, default=10,
                     help='seconds ssh waits for a host to answer')


def parse_host(text, slots=1):
  m = _HOST.match(text.strip())
  if not m:
    raise flags.UsageError(
        'Host "%s" is not [user@]host[:ssh_port] (e.g. alice@10.0.0.2:22).'
        % text)
  if m.group('name').startswith('-'):
    # ssh would read it as an option (-oProxyCommand=... runs a command).
    raise flags.UsageError(
        'Host "%s" starts with "-", which ssh would take as one of its '
        'options, not a host. Give the host\'s name or address (e.g. '
        'alice@10.0.0.2:22); ssh options go in --ssh_option or '
        '--ssh_config.' % text)
  port = m.group('port')
  return Host(m.group('name'), m.group('user'), int(port) if port else None,
              slots)


def read_hostfile(path):
  try:
    with open(path) as f:
      lines = f.read().splitlines()
  except OSError as e:
    raise flags.UsageError('--hostfile %s: %s.' % (path, e.strerror))
  hosts = []
  for number, line in enumerate(lines, 1):
    words = line.split('#', 1)[0].split()
    if not words:
      continue
    slots = 1
    for word in words[1:]:
      m = re.match(r'^slots=(\d+)$', word)
      if not m or int(m.group(1)) < 1:
        raise flags.UsageError(
            '--hostfile %s line %d: "%s" is not slots=N (N >= 1); each line '
            'is "host [slots=N]".' % (path, number, word))
      slots = int(m.group(1))
    hosts.append(parse_host(words[0], slots))
  if not hosts:
    raise flags.UsageError('--hostfile %s lists no host.' % path)
  return hosts


def hosts_of(args):
  """The --hosts or --hostfile hosts, or None to run every task here."""
  if args.hosts and args.hostfile:
    raise flags.UsageError('Give --hosts or --hostfile, not both.')
  if args.hostfile:
    return read_hostfile(args.hostfile)
  if args.hosts is not None:
    hosts = [parse_host(h) for h in args.hosts.split(',') if h.strip()]
    if not hosts:
      raise flags.UsageError('--hosts lists no host.')
    return hosts
  return None


def place(hosts, tasks_by_job):
  """{(job, index): Host}; see the module's docstring."""
  placed = {}
  used = dict.fromkeys(hosts, 0)
  ps = [t for t in tasks_by_job if t[0] == roles.PS]
  for i, task in enumerate(ps):
    placed[task] = hosts[i % len(hosts)]
    used[placed[task]] += 1
  # The slots the ps tasks left free, then round again over every slot.
  free = [h for h in hosts for _ in range(max(0, h.slots - used[h]))]
  by_slot = [h for h in hosts for _ in range(h.slots)]
  workers = [t for t in tasks_by_job if t[0] == roles.WORKER]
  for i, task in enumerate(workers):
    placed[task] = (free[i] if i < len(free)
                    else by_slot[(i - len(free)) % len(by_slot)])
  for task in tasks_by_job:
    placed.setdefault(task, hosts[0])
  return placed


def addresses(placed, tasks_by_job, base_port):
  """{(job, index): 'host:port'}: each host's tasks on consecutive ports."""
  next_port = {}
  found = {}
  for task in tasks_by_job:
    host = placed[task]
    port = next_port.get(host.name, base_port)
    next_port[host.name] = port + 1
    found[task] = '%s:%d' % (host.name, port)
  return found


# ssh asks a silent server every this many seconds if it is still there.
ALIVE_INTERVAL_SECONDS = 5


class Ssh:
  """ssh command lines for the hosts, with the user's options."""

  def __init__(self, args, silent_seconds=15):
    """``silent_seconds``: how long a connection that hears nothing is
    kept. For a run's tasks it is as long as a task may take to end by
    itself (deadlines.lost_peer_end_seconds): a network drop shorter than
    the run's own bounds must not end the run, and a longer one is named by
    the tasks' own checks (a partition, a stall), not by ssh."""
    self.python = args.remote_python
    self.workdir = args.remote_workdir
    self.options = ['-o', 'BatchMode=yes',
                    '-o', 'ConnectTimeout=%d' % args.ssh_connect_timeout,
                    '-o', 'ServerAliveInterval=%d' % ALIVE_INTERVAL_SECONDS,
                    '-o', 'ServerAliveCountMax=%d' % max(
                        3, math.ceil(silent_seconds /
                                     ALIVE_INTERVAL_SECONDS))]
    if args.ssh_config:
      self.options = ['-F', args.ssh_config] + self.options
    for option in args.ssh_option:
      self.options += ['-o', option]

  def argv(self, host, remote_args):
    """ssh running ``python -m ...ssh_remote REMOTE_ARGS`` on ``host``."""
    command = '%s -m tf_cnn_benchmarks.cluster.launch.ssh_remote %s' % (
        shlex.quote(self.python), ' '.join(shlex.quote(a)
                                          for a in remote_args))
    if self.workdir:
      command = 'cd %s && exec %s' % (shlex.quote(self.workdir), command)
    else:
      command = 'exec ' + command
    where = (['-p', str(host.ssh_port)] if host.ssh_port else []) + (
        ['-l', host.user] if host.user else [])
    # "--": whatever the host is called, it is not an option.
    return ['ssh', '-T'] + self.options + where + ['--', host.name, command]

  def task_argv(self, host, task_flags):
    return self.argv(host, ['task', '--'] + list(task_flags))

  def reap_argv(self, host):
    return lambda pid, tag: self.argv(host, ['reap', str(pid), tag])


class PreflightError(Exception):
  """A host failed a check; ``exit_code`` says how the launcher exits."""

  def __init__(self, message, exit_code):
    super().__init__(message)
    self.exit_code = exit_code


def _check_host(ssh, host, ports):
  """(answer dict, None) or (None, why this host cannot run tasks)."""
  argv = ssh.argv(host, ['preflight', '--ports',
                         ','.join(str(p) for p in ports)])
  try:
    out = subprocess.run(argv, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL,
                         timeout=_PREFLIGHT_SECONDS)
  except subprocess.TimeoutExpired:
    return None, 'no answer within %d s' % _PREFLIGHT_SECONDS
  except OSError as e:
    return None, 'cannot run ssh: %s' % e
  said = (out.stderr.strip().splitlines() or [''])[-1]
  for line in out.stdout.splitlines():
    if line.startswith(ssh_remote.MARK + 'preflight '):
      return json.loads(line.split(' ', 2)[2]), None
  if out.returncode == 255:
    return None, 'cannot ssh there: %s' % (said or 'ssh exit 255')
  if out.returncode == 127:
    return None, '%s not found there (--remote_python): %s' % (
        ssh.python, said)
  return None, ('tf_cnn_benchmarks does not run there with %s (is it '
                'installed? --remote_python, --remote_workdir): %s' % (
                    ssh.python, said or 'exit %d' % out.returncode))


def preflight(ssh, tasks):
  """Checks every host of ``tasks`` (RemoteTasks) once, in parallel;
  PreflightError naming each host that failed and why."""
  ports = {}
  for task in tasks:
    ports.setdefault(task.host, []).append(
        int(task.address.rsplit(':', 1)[1]))
  with concurrent.futures.ThreadPoolExecutor(len(ports)) as pool:
    answers = dict(zip(ports, pool.map(
        lambda h: _check_host(ssh, h, ports[h]), ports)))
  down = ['%s: %s' % (h, why) for h, (_, why) in answers.items() if why]
  if down:
    raise PreflightError(
        'Not starting: %s cannot run tasks. %s' % (
            'this host' if len(down) == 1 else 'these hosts',
            '; '.join(down)),
        exit_codes.UNREACHABLE if any('cannot ssh' in d for d in down)
        else exit_codes.RUN_FAILED)
  here = ('this machine', versions.harness_version(),
          versions.tf_installed_version())
  seen = [here] + [(str(h), a['harness'], a['tensorflow'])
                   for h, (a, _) in answers.items()]
  if len({s[1:] for s in seen}) > 1:
    raise PreflightError(
        'Not starting: the hosts run different versions, and every task '
        'must run the same harness and TensorFlow. %s. Install the same '
        'versions everywhere (or point --remote_python at them).' % '; '.join(
            '%s: harness %s, TensorFlow %s%s' % (
                name, harness, tf, '' if (harness, tf) == here[1:]
                else ' (differs)') for name, harness, tf in seen),
        exit_codes.RUN_FAILED)
  busy = ['%s: port %s in use' % (h, ', '.join(map(str, a['busy_ports'])))
          for h, (a, _) in answers.items() if a['busy_ports']]
  if busy:
    raise PreflightError(
        'Not starting: %s. Free them, or choose other ports with '
        '--base_port.' % '; '.join(busy), exit_codes.RUN_FAILED)
