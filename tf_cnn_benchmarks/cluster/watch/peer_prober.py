"""TCP probes of the peers, and what they say about a lost peer.

A peer that refuses connections REFUSALS_TO_GONE times in a row is gone
(its process died); one that cannot be reached may be behind a partition.
When the watchdog must end a task for a lost peer, the peer lost *first*
is the cause: behind a partition a peer cannot leave a note, and the tasks
that notice it leave (e.g. a ps unreachable for seconds before a worker
that gave up on it exits).
"""

from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks.cluster.watch import peer_failures
from tf_cnn_benchmarks.cluster.watch import reachability

# At most one round of probes per this many seconds.
_MIN_INTERVAL_SECONDS = 0.9
PROBE_TIMEOUT_SECONDS = 1.0


class PeerProber:

  def __init__(self, peers, own_label=None):
    """``peers``: {label: address} of every other task of the cluster;
    ``own_label``: this task's (a task cut off names itself)."""
    self.peers = dict(peers)
    self.own_label = own_label
    self.refusals = reachability.RefusalCount()
    self._bad_since = {}  # label -> when probes started failing
    self._probes = {}
    self._last_probe = float('-inf')

  def probe(self, now):
    """{label: (address, reason or None)}, probed at most ~once a second."""
    if now - self._last_probe < _MIN_INTERVAL_SECONDS:
      return self._probes
    self._last_probe = now
    reasons = reachability.probe_all(self.peers,
                                     timeout=PROBE_TIMEOUT_SECONDS)
    probes = {}
    for label, address in sorted(self.peers.items()):
      reason = reasons[label]
      probes[label] = (address, reason)
      self.refusals.saw(label, reason)
      if reason is None:
        self._bad_since.pop(label, None)
      else:
        self._bad_since.setdefault(label, now)
    self._probes = probes
    return probes

  def frozen(self):
    """{label: reason} of the peers whose process is frozen (a gRPC call
    each: for a stall only, see reachability.frozen_peers)."""
    return reachability.frozen_peers(self.peers)

  def gone(self):
    """Peers counted gone (refused in a row), sorted."""
    return [label for label in self.refusals.labels()
            if self.refusals.gone(label)]

  def lost_peer_ending(self, gone, probes, finished_normally):
    """The Ending for a lost peer (``gone``; None: maybe none), naming the
    peer lost first; None when no peer is lost.

    ``finished_normally(label)``: the peer left with an "ok" note (its
    closed port is no failure).
    """
    bad = [label for label in self._bad_since
           if label in probes and probes[label][1] and
           not finished_normally(label)]
    root = min(bad, key=lambda label: (self._bad_since[label], label),
               default=gone)
    if root is None:
      return None
    address, reason = probes.get(root, (self.peers[root], None))
    if root == gone:
      reason = reachability.REFUSED  # As counted, whatever it says now.
    return endings.Ending(*peer_failures.lost_peer(
        root, address, reason, own_label=self.own_label))
