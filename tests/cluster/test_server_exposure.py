"""What a task's TensorFlow server exposes, and that users are told.

Checked on TensorFlow itself, not assumed: a server whose cluster spec
names 127.0.0.1 still listens on every interface (``ss -ltnp`` shows
``*:port``) and answers from another network namespace. So a task warns
once when its cluster spans non-loopback hosts, and ``launch --host`` does
not promise a bind address.
"""

import subprocess
import sys

import pytest

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
server.start_server(role, server.server_config(role))
print('serving', flush=True)
time.sleep(300)
'''


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
      reason = subprocess.run(
          ['ip', 'netns', 'exec', worker_ns, sys.executable, '-c',
           'from tf_cnn_benchmarks.cluster.watch import reachability; '
           'print(reachability.probe("%s:%d"))' % (netns.PS_ADDRESS, port)],
          cwd=helpers.REPO, capture_output=True, text=True,
          timeout=60).stdout.strip()
    finally:
      helpers.kill([proc])
  ours = [l for l in lines if 'pid=%d,' % proc.pid in l]
  assert len(ours) == 1, lines
  local_address = ours[0].split()[3]
  # '*' (every address, IPv4 and IPv6), as docs/cluster.md says.
  assert local_address == '*:%d' % port, lines
  assert reason == 'None', reason
  # A spec on loopback only: no warning, although the port is open to
  # every interface (the warning is about the cluster, not the bind).
  assert 'Warning' not in helpers.read(log), helpers.read(log)


def test_a_cluster_on_other_hosts_warns_once_on_loopback_not():
  warning = server.exposure_warning(_role('10.0.0.1:2222', '10.0.0.2:2222',
                                          '127.0.0.1:2223'))
  assert warning.startswith('Warning: ps0\'s TensorFlow server listens on '
                            'port 2222 of every interface'), warning
  assert 'no authentication' in warning
  assert 'trusted network only' in warning
  assert '(10.0.0.1, 10.0.0.2)' in warning
  assert '\n' not in warning
  assert server.exposure_warning(_role('127.0.0.1:2222',
                                       '127.0.0.1:2223')) is None
  assert server.exposure_warning(_role('localhost:2222', '[::1]:2223',
                                       '127.0.0.5:2224')) is None
  assert server.exposure_warning(_role('localhost:2222',
                                       'gpu7.example.com:2222')) is not None


def test_launch_host_help_promises_no_bind_address():
  text = launcher.make_parser().format_help()
  assert 'Not a bind address' in ' '.join(text.split()), text
  assert 'every task listens on' not in text
