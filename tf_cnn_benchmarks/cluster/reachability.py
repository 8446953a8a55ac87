"""Can this task reach a peer's server, and if not, why not?

A TCP connect to the peer's port answers in milliseconds and says more than
TensorFlow does: a session whose peer has no server waits forever, only
logging "CreateSession still waiting for response from worker" every 10 s,
and no RunOptions or operation timeout bounds that wait. So every task
checks its peers from Python before it creates a session (``wait_for``),
and the watchdog, the failure path and a ps use ``probe`` to tell a peer
that is gone from one that is unreachable. ``is_gone`` is the one place
that decides which:

  * gone: the peer's host answered and refused (or reset) the connection,
    so nothing listens on the port: its process crashed or was killed;
  * unreachable: no answer at all (a timeout, no route): a network
    partition or a frozen host, which may heal.

No TensorFlow here: the ps task and the launcher use it too.
"""

import concurrent.futures
import errno
import socket
import time

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.cluster import roles

REFUSED = 'connection refused'
RESET = 'connection reset'
# A peer counts as gone after this many refused probes in a row (about a
# second apart): one refusal could be a server restarting its listener.
REFUSALS_TO_GONE = 2
# Poll period of wait_for: short next to a TensorFlow start-up.
_RETRY_SECONDS = 0.2


class ClusterWaitTimeout(RuntimeError):
  """A cluster wait ran out of time; names the tasks that were missing."""
  exit_code = exit_codes.UNREACHABLE
  status = 'unreachable'

  def __init__(self, message, missing):
    super().__init__(message)
    self.missing = missing


def probe(address, timeout=1.0):
  """None when a server accepts connections at 'host:port', else why not."""
  host, port = roles.split_address(address)
  try:
    with socket.create_connection((host, port), timeout=timeout):
      return None
  except socket.gaierror:
    return 'host name unknown (%s does not resolve)' % host
  except ConnectionRefusedError:
    return REFUSED
  except ConnectionResetError:
    return RESET
  except socket.timeout:
    # Host down, a firewall dropping packets, or a partition.
    return 'no answer within %.0f s' % timeout
  except OSError as e:
    if e.errno == errno.EHOSTUNREACH:
      return 'no route to host'
    if e.errno == errno.ENETUNREACH:
      return 'network unreachable'
    return e.strerror or str(e)


def probe_all(addresses, timeout=1.0):
  """{label: reason or None} for {label: address}, probed in parallel.

  Behind a partition each probe takes the whole ``timeout``; in parallel a
  cluster of any size is checked in about one.
  """
  if not addresses:
    return {}
  labels = sorted(addresses)
  with concurrent.futures.ThreadPoolExecutor(
      max_workers=min(32, len(labels))) as pool:
    reasons = pool.map(lambda label: probe(addresses[label], timeout), labels)
    return dict(zip(labels, reasons))


class RefusalCount:
  """Refused probes in a row, per peer: REFUSALS_TO_GONE of them mean the
  peer's process is gone (any answer, or any other failure, resets it)."""

  def __init__(self):
    self._in_a_row = {}

  def saw(self, label, reason):
    self._in_a_row[label] = (self._in_a_row.get(label, 0) + 1
                             if is_gone(reason) else 0)

  def gone(self, label):
    return self._in_a_row.get(label, 0) >= REFUSALS_TO_GONE

  def labels(self):
    """Every peer probed so far, sorted."""
    return sorted(self._in_a_row)


def is_gone(reason):
  """Does a probe result mean the peer's process is not running at all?

  The peer's host answered and refused (or reset) the connection: nothing
  listens on the port any more. Every other reason may be the network,
  and may heal: the peer is unreachable, not gone.
  """
  return reason in (REFUSED, RESET)


def describe(label, address, reason):
  return '%s (%s: %s)' % (label, address, reason)


def wait_for(addresses, timeout, what):
  """Waits until every 'host:port' accepts TCP connections.

  ``addresses``: {task label: 'host:port'}. Retries until ``timeout``
  seconds have passed, so a peer that is merely late to start is picked up;
  then raises ClusterWaitTimeout naming each missing task, its address and
  the last reason it could not be reached.
  """
  deadline = time.monotonic() + timeout
  waiting = dict(addresses)
  reasons = {}
  while True:
    for label, address in list(waiting.items()):
      reason = probe(address)
      if reason is None:
        del waiting[label]
      else:
        reasons[label] = reason
    if not waiting:
      return
    if time.monotonic() >= deadline:
      raise ClusterWaitTimeout(
          '%s: no server answered at %s within %.0f s (--startup_timeout); '
          'start those tasks, or check the addresses and that this host '
          'can reach them.' % (what, ', '.join(
              describe(label, waiting[label], reasons[label])
              for label in sorted(waiting)), timeout), sorted(waiting))
    time.sleep(_RETRY_SECONDS)
