"""Probes through a real C resolver: a name that no longer exists is a
peer gone, and a DNS server that never answers costs a probe its timeout,
not the resolver's 5-30 s.

In Kubernetes a crashed pod's name goes with it (a headless Service lists
running pods only), so its peers' probes get NXDOMAIN. That used to count
as a partition (unreachable, which may heal), so the pod's loss was
noticed only by the stall bound, minutes later; a lookup the resolver kept
retrying held the watchdog and the task's way out for as long.

Each case runs in a network namespace of its own whose /etc/resolv.conf
(bind-mounted by `ip netns exec`) points at a DNS server this test runs on
the namespace's loopback: NXDOMAIN for names under gone.test, silence for
names under silent.test.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests import tools
from tests.driver_helpers import REPO

# A DNS server on 127.0.0.1:53 (a thread), then the probes; prints JSON.
_SCRIPT = r'''
import json, socket, struct, sys, threading, time
sys.path.insert(0, %(repo)r)
from tf_cnn_benchmarks.cluster.watch import reachability

def serve(sock):
  while True:
    query, peer = sock.recvfrom(512)
    qid = query[:2]
    end = 12
    while query[end]:
      end += query[end] + 1
    question = query[12:end + 5]
    if b'\x06silent\x04test' in question:
      continue  # never answers
    # NXDOMAIN: response, recursion available, RCODE 3; the question back.
    sock.sendto(qid + struct.pack('>HHHHH', 0x8183, 1, 0, 0, 0) + question,
                peer)

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(('127.0.0.1', 53))
threading.Thread(target=serve, args=(sock,), daemon=True).start()
out = {}
for name in ('peer.gone.test', 'peer.silent.test'):
  started = time.monotonic()
  reason = reachability.probe(name + ':2222', timeout=1.0)
  out[name] = [reason, reachability.is_gone(reason),
               time.monotonic() - started]
print('PROBES ' + json.dumps(out))
'''


@pytest.fixture
def namespace_with_our_dns():
  tools.require_command('ip', tools.IP_INSTALL)
  tools.require_root('network namespaces')
  name = 'tcbdns%d' % os.getpid()
  etc = '/etc/netns/' + name
  made = subprocess.run(['ip', 'netns', 'add', name], capture_output=True,
                        text=True)
  if made.returncode != 0:
    tools.unavailable('this machine does not allow network namespaces: %s'
                      % made.stderr.strip(), tools.ROOT_INSTALL)
  try:
    os.makedirs(etc, exist_ok=True)
    with open(os.path.join(etc, 'resolv.conf'), 'w') as f:
      # The resolver would try 2 x 5 s on a silent server.
      f.write('nameserver 127.0.0.1\noptions timeout:5 attempts:2\n')
    subprocess.run(['ip', '-n', name, 'link', 'set', 'lo', 'up'], check=True)
    yield name
  finally:
    subprocess.run(['ip', 'netns', 'delete', name], capture_output=True)
    shutil.rmtree(etc, ignore_errors=True)


@pytest.mark.timeout(120)
def test_a_vanished_name_is_gone_and_a_silent_dns_is_bounded(
    namespace_with_our_dns):
  done = subprocess.run(
      ['ip', 'netns', 'exec', namespace_with_our_dns, sys.executable, '-c',
       _SCRIPT % {'repo': REPO}], capture_output=True, text=True, timeout=90)
  assert done.returncode == 0, done.stderr[-3000:]
  line = [l for l in done.stdout.splitlines() if l.startswith('PROBES ')][0]
  probes = json.loads(line[len('PROBES '):])
  reason, gone, took = probes['peer.gone.test']
  assert gone, reason
  assert reason.startswith('no such host name'), reason
  reason, gone, took = probes['peer.silent.test']
  assert not gone, reason
  assert 'lookup took over 1 s' in reason, reason
  assert took < 3, took
