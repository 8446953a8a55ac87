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
    so nothing listens on the port: its process crashed or was killed; or
    the peer's name no longer exists (NXDOMAIN): in Kubernetes a pod's name
    goes with the pod (a headless Service lists running pods only);
  * unreachable: no answer at all (a timeout, no route, a DNS server that
    does not answer): a network partition or a frozen host, which may
    heal.

Every probe is bounded by its timeout, the name lookup too: the C
resolver itself may block 5 to 30 s on a DNS server that does not answer,
which would hold up the watchdog and the task's way out.

A third state, asked about by a stalled run and by a secondary error's
search for its cause (``frozen_peers``, root_cause.py): a peer
whose process is stopped (SIGSTOP, a debugger) or wedged still accepts
connections, since the kernel completes the TCP handshake for it, so a
TCP probe calls it fine. Only the running server answers a call, so a
short gRPC call to TensorFlow's worker service tells it apart: *frozen*.

No TensorFlow here: the ps task and the launcher use it too.
"""

import concurrent.futures
import errno
import socket
import threading
import time

import grpc

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.cluster import roles

REFUSED = 'connection refused'
RESET = 'connection reset'
# The start of the reason for a name that does not exist (NXDOMAIN).
NO_SUCH_NAME = 'no such host name'
# A peer counts as gone after this many refused probes in a row (about a
# second apart): one refusal could be a server restarting its listener.
REFUSALS_TO_GONE = 2
FROZEN = ('it accepts connections but its server answers nothing (its '
          'process is stopped, e.g. by SIGSTOP, or hung)')
# Every TensorFlow server (ps or worker) serves this; it only lists the
# server's devices, so a running one answers in milliseconds. An empty
# request is a valid GetStatusRequest; the reply is not parsed.
_STATUS_METHOD = '/tensorflow.WorkerService/GetStatus'
# Poll period of wait_for: short next to a TensorFlow start-up.
_RETRY_SECONDS = 0.2


class ClusterWaitTimeout(RuntimeError):
  """A cluster wait ran out of time; names the tasks that were missing."""
  exit_code = exit_codes.UNREACHABLE
  status = 'unreachable'

  def __init__(self, message, missing):
    super().__init__(message)
    self.missing = missing


def _resolve(host, port, timeout):
  """(a numeric address to connect to, None) or (None, why not), within
  ``timeout`` s: the lookup runs in a thread of its own, left behind
  (daemon) if the resolver blocks longer."""
  found = {}

  def lookup():
    try:
      found['info'] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
      found['error'] = e
  thread = threading.Thread(target=lookup, name='name-lookup', daemon=True)
  thread.start()
  thread.join(timeout)
  if thread.is_alive():
    return None, 'its name lookup took over %.0f s (DNS not answering)' % (
        timeout)
  error = found.get('error')
  if error is None:
    return found['info'][0][4][0], None
  if error.errno == socket.EAI_NONAME:
    return None, '%s (%s does not resolve)' % (NO_SUCH_NAME, host)
  if error.errno == socket.EAI_AGAIN:
    return None, 'its name lookup failed for now (%s: %s)' % (
        host, error.strerror)
  return None, 'host name unknown (%s: %s)' % (host, error.strerror)


def probe(address, timeout=1.0):
  """None when a server accepts connections at 'host:port', else why not."""
  host, port = roles.split_address(address)
  numeric, why = _resolve(host, port, timeout)
  if why is not None:
    return why
  try:
    with socket.create_connection((numeric, port), timeout=timeout):
      return None
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
  return _in_parallel(lambda label: probe(addresses[label], timeout),
                      addresses)


def _in_parallel(fn, labels):
  """{label: fn(label)}, the calls made at once."""
  if not labels:
    return {}
  labels = sorted(labels)
  with concurrent.futures.ThreadPoolExecutor(
      max_workers=min(32, len(labels))) as pool:
    return dict(zip(labels, pool.map(fn, labels)))


def _server_answers(address, timeout):
  """False only when the call timed out: a refusal or an error reply is
  the TCP probe's business (or a server that is running)."""
  # Straight to the peer, as TensorFlow's own channels go (grpc would
  # otherwise follow an http_proxy setting).
  with grpc.insecure_channel(address,
                             [('grpc.enable_http_proxy', 0)]) as channel:
    try:
      channel.unary_unary(_STATUS_METHOD)(b'', timeout=timeout)
    except grpc.RpcError as e:
      return e.code() != grpc.StatusCode.DEADLINE_EXCEEDED
  return True


def frozen_peers(addresses, timeout=2.0):
  """{label: FROZEN} of the peers whose port accepts connections but whose
  server does not answer a call within ``timeout``, probed in parallel.

  For a stall (the watchdog's thread, a few calls per stall) and a
  secondary error's search for its cause (two asks): it takes
  ``timeout`` when a peer is frozen.
  """
  def frozen(label):
    address = addresses[label]
    return (probe(address, timeout) is None and
            not _server_answers(address, timeout))
  return {label: FROZEN
          for label, is_frozen in _in_parallel(frozen, addresses).items()
          if is_frozen}


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
  listens on the port any more; or its name is gone (a Kubernetes pod's
  goes with the pod). Every other reason may be the network, and may
  heal: the peer is unreachable, not gone.
  """
  return reason in (REFUSED, RESET) or (
      reason is not None and reason.startswith(NO_SUCH_NAME))


def no_route_from_here(address, timeout=1.0):
  """Does this host's own routing table have no route to ``address``?

  Then this host is the one cut off (its link is down, or its routes are
  gone), not the peer: in a partition both sides find the other
  unreachable, and only this tells them apart. A TCP probe's "network
  unreachable" alone does not (a router on the way may answer so); a UDP
  socket's connect sends nothing and only looks the route up here.
  """
  host, port = roles.split_address(address)
  numeric, why = _resolve(host, port, timeout)
  if why is not None:
    return False
  family = socket.AF_INET6 if ':' in numeric else socket.AF_INET
  with socket.socket(family, socket.SOCK_DGRAM) as udp:
    try:
      udp.connect((numeric, port))
    except OSError as e:
      return e.errno == errno.ENETUNREACH
  return False


def state(reason):
  """'gone', 'frozen' or 'unreachable': what a failed probe says."""
  if is_gone(reason):
    return 'gone'
  return 'frozen' if reason == FROZEN else 'unreachable'


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
          '%s: no server answered at %s within %.0f s (of '
          '--startup_timeout); '
          'start those tasks, or check the addresses and that this host '
          'can reach them.' % (what, ', '.join(
              describe(label, waiting[label], reasons[label])
              for label in sorted(waiting)), timeout), sorted(waiting))
    time.sleep(_RETRY_SECONDS)
