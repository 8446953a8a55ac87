"""Two network namespaces joined by a veth pair: "two hosts" on one machine.

The ps side gets 10.200.1.1, the worker side 10.200.1.2; each namespace
has its own loopback and nothing else, so tasks talk only over the pair.
Made per test and removed after it (deleting a namespace deletes its end of
the pair). Needs root and the `ip` command; skips the test otherwise, or
fails it under CI=true (tests/tools.py; the chaos soak, studies/chaos.py,
passes its own ``unavailable``).
"""

import contextlib
import os
import shutil
import subprocess

from tests import tools

PS_ADDRESS = '10.200.1.1'
WORKER_ADDRESS = '10.200.1.2'


def _ip(*args):
  return subprocess.run(['ip'] + list(args), capture_output=True, text=True,
                        timeout=30)


def _unavailable(why):
  tools.unavailable(why, '%s, as root' % tools.IP_INSTALL)


@contextlib.contextmanager
def veth_namespaces(unavailable=_unavailable):
  """Yields (ps namespace, worker namespace); removes both afterwards.

  ``unavailable(why)`` is called (and must raise) when this machine cannot
  make them.
  """
  if not shutil.which('ip'):
    unavailable('network namespaces need the `ip` command (iproute2)')
  if os.geteuid() != 0:
    unavailable('network namespaces need root (CAP_SYS_ADMIN)')
  tag = 'tcb%d' % os.getpid()
  ps_ns, worker_ns = tag + 'p', tag + 'w'
  made = []
  try:
    for ns in (ps_ns, worker_ns):
      result = _ip('netns', 'add', ns)
      if result.returncode != 0:
        unavailable('this machine does not allow network namespaces: %s'
                    % result.stderr.strip())
      made.append(ns)
    steps = [
        ('link', 'add', tag + 'P', 'type', 'veth', 'peer', 'name',
         tag + 'W'),
        ('link', 'set', tag + 'P', 'netns', ps_ns),
        ('link', 'set', tag + 'W', 'netns', worker_ns),
        ('-n', ps_ns, 'addr', 'add', PS_ADDRESS + '/24', 'dev', tag + 'P'),
        ('-n', worker_ns, 'addr', 'add', WORKER_ADDRESS + '/24', 'dev',
         tag + 'W'),
        ('-n', ps_ns, 'link', 'set', tag + 'P', 'up'),
        ('-n', worker_ns, 'link', 'set', tag + 'W', 'up'),
        # A task reaches its own server through localhost.
        ('-n', ps_ns, 'link', 'set', 'lo', 'up'),
        ('-n', worker_ns, 'link', 'set', 'lo', 'up'),
    ]
    for step in steps:
      result = _ip(*step)
      if result.returncode != 0:
        unavailable('could not set up the veth pair (ip %s): %s' % (
            ' '.join(step), result.stderr.strip()))
    yield ps_ns, worker_ns
  finally:
    # Deleting a namespace also deletes its end of the veth pair (and so
    # the pair).
    for ns in made:
      _ip('netns', 'del', ns)


def set_link(namespace, up):
  """Brings the pair's end in ``namespace`` up or down (down: a silent
  partition, no reset ever reaches the other side)."""
  link = namespace[:-1] + namespace[-1].upper()
  result = _ip('-n', namespace, 'link', 'set', link, 'up' if up else 'down')
  assert result.returncode == 0, result.stderr
