"""What a task's TensorFlow server exposes, and that users are told.

Checked on TensorFlow itself, not assumed: a server whose cluster spec
names 127.0.0.1 still listens on every interface (``ss -ltnp`` shows
``*:port``) and answers from another network namespace; TensorFlow has no
way to bind one address. So every task measures where its server listens,
records it (``server_listens_on``) and warns once when that is more than
loopback, a loopback cluster too, with the firewall rule that closes the
port (which is checked here to close it); ``launch --host`` does not
promise a bind address.
"""

import dataclasses
import re
import subprocess
import sys

import pytest

from tests import tools
from tests.cluster import helpers
from tests.cluster import netns
from tf_cnn_benchmarks.cluster.launch import launcher
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster import server

pytestmark = pytest.mark.cluster

# A task's server as run_task starts it, for a one-task cluster at argv[1].
_SERVE = '''
import sys, time
from tf_cnn_benchmarks.cluster import roles, server
role = roles.ClusterRole(
    jobs={'worker': (sys.argv[1],)}, job_name='worker', task_index=0,
    protocol='grpc', variable_update='collective_all_reduce',
    cross_replica_sync=True)
role = server.start_server(role, server.server_config(role))
print('serving on', *role.listens_on, flush=True)
time.sleep(300)
'''


def _probe_from(namespace, address):
  """reachability.probe of ``address`` run inside ``namespace``."""
  return subprocess.run(
      ['ip', 'netns', 'exec', namespace, sys.executable, '-c',
       'from tf_cnn_benchmarks.cluster.watch import reachability; '
       'print(reachability.probe("%s", timeout=3))' % address],
      cwd=helpers.REPO, capture_output=True, text=True,
      timeout=60).stdout.strip()


def _role(*hosts):
  return roles.ClusterRole(
      jobs={'ps': (hosts[0],), 'worker': tuple(hosts[1:])}, job_name='ps',
      task_index=0, protocol='grpc', variable_update='parameter_server',
      cross_replica_sync=True)


def _listening(namespace, port):
  """`ss -ltnpH` lines of whatever listens on ``port`` in ``namespace``."""
  result = subprocess.run(
      ['ip', 'netns', 'exec', namespace, 'ss', '-ltnpH',
       'sport = :%d' % port], capture_output=True, text=True, timeout=30)
  assert result.returncode == 0, result.stderr
  return result.stdout.strip().splitlines()


@pytest.mark.timeout(180)
def test_a_server_named_127_0_0_1_listens_on_every_interface(tmp_path):
  # The warning's firewall rules are checked with iptables and ip6tables.
  tools.require_command('iptables', tools.IPTABLES_INSTALL)
  tools.require_command('ip6tables', tools.IPTABLES_INSTALL)
  port = 2222
  log = str(tmp_path / 'server.log')
  with netns.veth_namespaces() as (ps_ns, worker_ns):
    proc = helpers.start(['-c', _SERVE, '127.0.0.1:%d' % port],
                         prefix=['ip', 'netns', 'exec', ps_ns],
                         log_path=log)
    try:
      helpers.wait_for(lambda: 'serving' in helpers.read(log) or
                       proc.poll() is not None, 120, 'the server')
      assert proc.poll() is None, helpers.read(log)
      lines = _listening(ps_ns, port)
      # Another namespace reaches it at the veth address, not 127.0.0.1.
      reason = _probe_from(worker_ns, '%s:%d' % (netns.PS_ADDRESS, port))
      # The rule the warning gives closes it to the other namespace and
      # leaves it open on loopback.
      (warning,) = [l for l in helpers.read(log).splitlines()
                    if l.startswith('Warning: ')]
      for rule in re.findall(r'(ip6?tables -I INPUT [^;()]*-j DROP)',
                             warning):
        done = subprocess.run(['ip', 'netns', 'exec', ps_ns] + rule.split(),
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, (rule, done.stderr)
      firewalled = _probe_from(worker_ns, '%s:%d' % (netns.PS_ADDRESS, port))
      on_loopback = _probe_from(ps_ns, '127.0.0.1:%d' % port)
    finally:
      helpers.kill([proc])
  ours = [l for l in lines if 'pid=%d,' % proc.pid in l]
  assert len(ours) == 1, lines
  local_address = ours[0].split()[3]
  # '*' (every address, IPv4 and IPv6), as docs/cluster.md says.
  assert local_address == '*:%d' % port, lines
  assert reason == 'None', reason
  # Measured as the kernel has it, and said although the cluster is all
  # on loopback: the port is open to every interface.
  assert 'serving on [::]:%d' % port in helpers.read(log), helpers.read(log)
  assert warning.startswith(
      "Warning: worker0's TensorFlow server listens on every interface of "
      'this host ([::]:%d), though its cluster is all on loopback' % port), (
          warning)
  assert len(re.findall(r'ip6?tables -I INPUT', warning)) == 2, warning
  assert firewalled.startswith('no answer'), firewalled
  assert on_loopback == 'None', on_loopback


def test_a_server_reachable_from_other_hosts_warns_once():
  def warning(hosts, listens_on=('[::]:2222',)):
    return server.exposure_warning(dataclasses.replace(
        _role(*hosts), listens_on=tuple(listens_on)))
  other_hosts = warning(('10.0.0.1:2222', '10.0.0.2:2222', '127.0.0.1:2223'))
  assert other_hosts.startswith(
      "Warning: ps0's TensorFlow server listens on every interface of this "
      'host ([::]:2222), not only 10.0.0.1'), other_hosts
  assert 'no authentication' in other_hosts
  assert 'trusted network only' in other_hosts
  assert '(10.0.0.1, 10.0.0.2)' in other_hosts
  assert '\n' not in other_hosts
  for hosts in (('127.0.0.1:2222', '127.0.0.1:2223'),
                ('localhost:2222', '[::1]:2223', '127.0.0.5:2224')):
    loopback = warning(hosts)
    assert 'though its cluster is all on loopback' in loopback, loopback
    assert ('iptables -I INPUT -p tcp --dport 2222 ! -i lo -j DROP'
            in loopback), loopback
    # A server that listens on loopback only (or nowhere) is not exposed.
    assert warning(hosts, ['127.0.0.1:2222', '[::1]:2222']) is None
    assert warning(hosts, []) is None
  assert warning(('localhost:2222', 'gpu7.example.com:2222')) is not None


@pytest.mark.timeout(300)
def test_a_loopback_launch_records_where_each_task_listens(tmp_path):
  code, out = helpers.launch(
      ['--ps', '1', '--workers', '1'],
      helpers.tiny_flags(str(tmp_path), variable_update='parameter_server'))
  assert code == 0, out
  for label in ('ps0', 'worker0'):
    said = [l for l in helpers.task_lines(out, label)
            if l.startswith('Warning: ')]
    assert len(said) == 1 and 'all on loopback' in said[0], out
  rec = helpers.records(str(tmp_path))['worker0']
  port = roles.split_address(rec['config']['cluster']['worker'][0])[1]
  assert rec['config']['server_listens_on'] == ['[::]:%d' % port], rec


def test_launch_host_help_promises_no_bind_address():
  text = launcher.make_parser().format_help()
  assert 'Not a bind address' in ' '.join(text.split()), text
  assert 'every task listens on' not in text
