"""Fake hosts for the ssh launcher: network namespaces running real sshd.

A "client" namespace holds a bridge (10.202.N.1) and runs the launcher;
each host is a namespace with its own address on that bridge (10.202.N.2,
.3, ...) and its own OpenSSH server, started here on port 2022 with a
throwaway host key and a throwaway client key in authorized_keys. The
launcher reaches them with the real `ssh` client and the ssh config this
writes (`-F`: the key, port 2022, user root, no host-key checks). The
namespaces share the file system, so the "remote" python is this venv,
reached through a small wrapper script that puts this checkout first on
PYTHONPATH (plus whatever the host's sshd sets in TCB_TEST_PYTHONPATH).
Everything is removed afterwards (deleting the client namespace deletes the
bridge and every veth pair). Needs root, `ip` and openssh-server; skips the
test otherwise, saying which (fails it under CI=true: tests/tools.py).
"""

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time

from tests import tools
from tests.cluster import helpers

SSH_PORT = 2022
_SSHD = shutil.which('sshd') or '/usr/sbin/sshd'


def _ip(*args):
  return subprocess.run(['ip'] + list(args), capture_output=True, text=True,
                        timeout=30)


@dataclasses.dataclass
class FakeHost:
  namespace: str
  address: str
  sshd: subprocess.Popen = None


@dataclasses.dataclass
class FakeHosts:
  client: str  # the namespace to run the launcher in
  hosts: list
  ssh_config: str
  remote_python: str

  def in_client(self):
    return ['ip', 'netns', 'exec', self.client]

  def block_ssh(self, host, blocked):
    """Drops (or lets through again) every packet of ``host``'s ssh
    connections, in its own namespace: the launcher's link to its tasks
    goes silent while the cluster's own traffic flows on."""
    tools.require_command('iptables', tools.IPTABLES_INSTALL)
    action = '-A' if blocked else '-D'
    for rule in (['INPUT', '-p', 'tcp', '--dport', str(SSH_PORT)],
                 ['OUTPUT', '-p', 'tcp', '--sport', str(SSH_PORT)]):
      result = subprocess.run(
          ['ip', 'netns', 'exec', host.namespace, 'iptables', action] +
          rule + ['-j', 'DROP'], capture_output=True, text=True, timeout=30)
      assert result.returncode == 0, result.stderr

  def launcher_args(self, hosts=None):
    return ['--hosts', ','.join(hosts or [h.address for h in self.hosts]),
            '--ssh_config', self.ssh_config,
            '--remote_python', self.remote_python]

  def stray_pids(self):
    """{namespace: pids} of processes in host namespaces other than sshd's
    listener (a finished task's sshd session leaves with it)."""
    found = {}
    for host in self.hosts:
      out = _ip('netns', 'pids', host.namespace).stdout.split()
      listener = host.sshd.pid if host.sshd else None
      pids = [int(p) for p in out if int(p) != listener and
              helpers.pid_alive(int(p))]
      if pids:
        found[host.namespace] = pids
    return found

  def task_pid(self, job, index):
    """(namespace, pid) of task job/index's own process (not its guard)."""
    needles = ('tf_cnn_benchmarks.cli', '--job_name=%s' % job,
               '--task_index=%d' % index)
    for host in self.hosts:
      for pid in _ip('netns', 'pids', host.namespace).stdout.split():
        try:
          with open('/proc/%s/cmdline' % pid, 'rb') as f:
            argv = f.read().decode(errors='replace').split('\0')
        except OSError:
          continue
        if all(n in argv for n in needles):
          return host.namespace, int(pid)
    return None, None


def _check_can_run():
  tools.require_command('ip', tools.IP_INSTALL)
  tools.require_root('fake hosts (network namespaces)')
  for tool in (_SSHD, shutil.which('ssh'), shutil.which('ssh-keygen')):
    if not tool or not os.path.exists(tool):
      tools.unavailable('fake hosts need OpenSSH (sshd, ssh, ssh-keygen)',
                        tools.SSH_INSTALL)


def _keygen(path):
  subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', path],
                 check=True, capture_output=True, timeout=30)


def _write(path, text, mode=0o600):
  with open(path, 'w') as f:
    f.write(text)
  os.chmod(path, mode)


def _start_sshd(host, folder, extra_config):
  config = os.path.join(folder, 'sshd_%s.conf' % host.namespace)
  _write(config, '\n'.join([
      'Port %d' % SSH_PORT,
      'ListenAddress %s' % host.address,
      'HostKey %s' % os.path.join(folder, 'host_key'),
      'PidFile %s' % os.path.join(folder, 'sshd_%s.pid' % host.namespace),
      'AuthorizedKeysFile %s' % os.path.join(folder, 'authorized_keys'),
      'StrictModes no', 'UsePAM no', 'PermitRootLogin prohibit-password',
      'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
      'LogLevel ERROR'] + list(extra_config)) + '\n')
  log = open(os.path.join(folder, 'sshd_%s.log' % host.namespace), 'wb')
  host.sshd = subprocess.Popen(
      ['ip', 'netns', 'exec', host.namespace, _SSHD, '-D', '-e', '-f',
       config], stdout=log, stderr=subprocess.STDOUT,
      stdin=subprocess.DEVNULL, start_new_session=True)
  log.close()


def _wait_for_sshd(fake, host):
  deadline = time.monotonic() + 30
  while True:
    out = subprocess.run(
        fake.in_client() + ['ssh', '-F', fake.ssh_config, host.address,
                            'true'],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    if out.returncode == 0:
      return
    assert host.sshd.poll() is None, 'sshd in %s exited' % host.namespace
    if time.monotonic() > deadline:
      raise AssertionError('sshd in %s never answered: %s' % (
          host.namespace, out.stderr))
    time.sleep(0.3)


@contextlib.contextmanager
def fake_hosts(folder, count=3, sshd_env=None, without_sshd=()):
  """Yields FakeHosts with ``count`` hosts.

  ``sshd_env``: {host number (0-based): {NAME: value}} set in that host's
  sessions (sshd's SetEnv). ``without_sshd``: host numbers that get no
  sshd (ssh to them is refused).
  """
  _check_can_run()
  folder = str(folder)
  tag = 'tsh%d' % (os.getpid() % 100000)
  subnet = '10.202.%d' % (os.getpid() % 200 + 20)
  client = tag + 'c'
  hosts = [FakeHost('%sh%d' % (tag, i), '%s.%d' % (subnet, i + 2))
           for i in range(count)]
  made = []
  try:
    for ns in [client] + [h.namespace for h in hosts]:
      result = _ip('netns', 'add', ns)
      if result.returncode != 0:
        tools.unavailable('this machine does not allow network namespaces: '
                          '%s' % result.stderr.strip(), tools.ROOT_INSTALL)
      made.append(ns)
    steps = [('-n', client, 'link', 'add', 'br0', 'type', 'bridge'),
             ('-n', client, 'addr', 'add', subnet + '.1/24', 'dev', 'br0'),
             ('-n', client, 'link', 'set', 'br0', 'up'),
             ('-n', client, 'link', 'set', 'lo', 'up')]
    for i, host in enumerate(hosts):
      inside, outside = '%sH%d' % (tag, i), '%sB%d' % (tag, i)
      steps += [
          ('link', 'add', inside, 'type', 'veth', 'peer', 'name', outside),
          ('link', 'set', inside, 'netns', host.namespace),
          ('link', 'set', outside, 'netns', client),
          ('-n', client, 'link', 'set', outside, 'master', 'br0'),
          ('-n', client, 'link', 'set', outside, 'up'),
          ('-n', host.namespace, 'addr', 'add', host.address + '/24', 'dev',
           inside),
          ('-n', host.namespace, 'link', 'set', inside, 'up'),
          ('-n', host.namespace, 'link', 'set', 'lo', 'up')]
    for step in steps:
      result = _ip(*step)
      if result.returncode != 0:
        tools.unavailable('could not build the fake hosts\' network (ip %s): '
                          '%s' % (' '.join(step), result.stderr.strip()),
                          tools.ROOT_INSTALL)
    _keygen(os.path.join(folder, 'host_key'))
    _keygen(os.path.join(folder, 'client_key'))
    shutil.copy(os.path.join(folder, 'client_key.pub'),
                os.path.join(folder, 'authorized_keys'))
    config = os.path.join(folder, 'ssh_config')
    _write(config, '\n'.join([
        'Host *', '  User root', '  Port %d' % SSH_PORT,
        '  IdentityFile %s' % os.path.join(folder, 'client_key'),
        '  IdentitiesOnly yes', '  StrictHostKeyChecking no',
        '  UserKnownHostsFile /dev/null', '  LogLevel ERROR']) + '\n')
    remote_python = os.path.join(folder, 'remote_python')
    _write(remote_python, '#!/bin/sh\n'
           'export PYTHONPATH="${TCB_TEST_PYTHONPATH:+$TCB_TEST_PYTHONPATH:}'
           '%s"\nexec %s "$@"\n' % (helpers.REPO, sys.executable), 0o755)
    fake = FakeHosts(client, hosts, config, remote_python)
    os.makedirs('/run/sshd', exist_ok=True)  # sshd's privilege separation
    for i, host in enumerate(hosts):
      if i not in without_sshd:
        env = (sshd_env or {}).get(i, {})
        _start_sshd(host, folder, ['SetEnv %s=%s' % kv for kv in env.items()])
    for i, host in enumerate(hosts):
      if i not in without_sshd:
        _wait_for_sshd(fake, host)
    yield fake
  finally:
    for host in hosts:
      if host.sshd:
        helpers.kill([host.sshd])
    for ns in made:
      # Anything a failed test left inside goes with its namespace.
      for pid in _ip('netns', 'pids', ns).stdout.split():
        try:
          os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
          pass
      _ip('netns', 'del', ns)
