"""While training: the progress board and the peers, read by the watchdog.

Once a second the watchdog reads the board (progress_board.py) with a
bounded call. A peer's failure note ends a synchronous task at once with
the peer's original error. With no progress for a few step times (or one
client quiet that long) it probes the peers, and a peer that is gone
(connection refused) ends a synchronous task naming it. In an asynchronous
cluster a peer's failure or absence is reported once and training goes on
(``carry_on``).
"""

import threading
import time

from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks.cluster.watch import peer_failures
from tf_cnn_benchmarks.cluster.watch import root_cause
from tf_cnn_benchmarks.cluster.watch import stragglers

# Probe peers once the cluster has been quiet this long (or 3 step times).
SUSPECT_AFTER_SECONDS = 2.0
# Bound of one board read.
BOARD_READ_SECONDS = 3.0


class _OneCallAtATime:
  """Runs a call in a helper thread and waits for it at most N seconds.

  A read of the board is bounded by its RunOptions, but a call TensorFlow
  cannot cancel (a peer behind a partition) must not take the watchdog
  with it: the watchdog stops waiting, and starts no second call while the
  first is still out.
  """

  def __init__(self):
    self._pending = None
    self._pending_since = None

  def call(self, fn, seconds):
    """(True, value) / (False, exception or why there is no answer)."""
    if self._pending is not None and self._pending.is_alive():
      return False, 'no answer for %.0f s' % (time.monotonic() -
                                              self._pending_since)
    box = {}

    def target():
      try:
        box['value'] = fn()
      except Exception as e:  # pylint: disable=broad-except
        box['error'] = e
    thread = threading.Thread(target=target, daemon=True)
    self._pending, self._pending_since = thread, time.monotonic()
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
      return False, 'no answer within %.0f s' % seconds
    if 'error' in box:
      return False, box['error']
    return True, box['value']


class ClusterWatch:
  """See the module docstring. ``carry_on(label, failure)`` reports a
  peer failure an asynchronous task trains on after;
  ``report_stragglers(line, found)`` the chief's stragglers
  (stragglers.py)."""

  def __init__(self, role, prober, carry_on, report_stragglers=None):
    self.role = role
    self.prober = prober
    self._carry_on = carry_on
    self._reader = _OneCallAtATime()
    self._sess = self._board = None
    self.labels = []
    self.own_index = None
    # The latest reading, and what it showed.
    self.snapshot = None
    self.snapshot_at = None
    self.board_error = None
    self.last_progress = None
    self._last_completed = None
    self._client_changed = {}  # client index -> when its count last moved
    # client index -> when its provisional note was first read
    self._provisional_since = {}
    self._report_stragglers = report_stragglers
    self.stragglers = None

  def start(self, sess, board, labels, own_index, now):
    self._sess, self._board = sess, board
    self.labels, self.own_index = list(labels), own_index
    self.last_progress = now
    self.stragglers = stragglers.watch_for(self.role, labels,
                                           self._report_stragglers)

  def check(self, now, typical_step_seconds):
    """An Ending when a peer's failure or absence ends this task."""
    ok, value = self._reader.call(
        lambda: self._board.read(self._sess, BOARD_READ_SECONDS * 1000),
        BOARD_READ_SECONDS + 1)
    if ok:
      self._take(value, now)
      ending = self._check_notes(value, now)
      if ending is not None:
        return ending
    else:
      self.board_error = (failures.first_line(value)
                          if isinstance(value, Exception) else value)
    # Suspicion: the cluster is quiet, or one client is (in an
    # asynchronous cluster the others keep the cluster moving). The
    # workers of ParameterServerStrategy are not on the board (its
    # coordinator is the one client) and the run goes on without one
    # (barrier or not: roles.ClusterRole.lockstep), so nothing would ever
    # look quiet: they are probed all the time.
    suspect_after = max(SUSPECT_AFTER_SECONDS, 3 * typical_step_seconds)
    if (not ok or self._quiet_client(now, suspect_after) or
        now - self.last_progress >= suspect_after or
        (self.role.in_graph and not self.role.lockstep)):
      return self._check_peers(now)
    return None

  def _take(self, snapshot, now):
    self.snapshot, self.board_error, self.snapshot_at = snapshot, None, now
    if self.stragglers is not None:
      self.stragglers.take(snapshot, now)
    previous = self._last_completed or (None,) * len(snapshot.completed)
    for i, count in enumerate(snapshot.completed):
      if count != previous[i] or i not in self._client_changed:
        self._client_changed[i] = now
    if snapshot.completed != self._last_completed:
      self._last_completed = snapshot.completed
      self.last_progress = now

  def _quiet_client(self, now, suspect_after):
    if self.snapshot is None:
      return False
    return any(now - changed >= suspect_after and not self.snapshot.left(i)
               for i, changed in self._client_changed.items()
               if i != self.own_index)

  def _check_notes(self, snapshot, now):
    for i, note in enumerate(snapshot.notes):
      if i == self.own_index or not note or note.get('status') == 'ok':
        continue
      if note.get('provisional'):
        # Its fuller note is on the way: as long as the main thread's
        # root-cause search would wait for it (root_cause.py).
        since = self._provisional_since.setdefault(i, now)
        if now - since < root_cause.PEER_FAILURE_WAIT_SECONDS:
          continue
      label = self.labels[i]
      status = note.get('status', endings.FAILED)
      run_failure = peer_failures.from_peer_note(label, status,
                                                 note.get('failure'))
      if self.role.lockstep:
        return endings.Ending(endings.after_peer_left(status), run_failure)
      self._carry_on(label, run_failure)
    return None

  def _check_peers(self, now):
    probes = self.prober.probe(now)
    for label in self.prober.gone():
      if self.finished_normally(label):
        continue
      # Without a worker an asynchronous cluster trains on; without a ps
      # (or in lockstep) nobody can.
      if not self.role.can_train_without(label):
        return self.prober.lost_peer_ending(label, probes,
                                            self.finished_normally)
      self._carry_on(label, peer_failures.peer_gone(
          label, self.prober.peers[label]))
    return None

  def finished_normally(self, label):
    """Did ``label`` leave with an "ok" note (so its closed port is fine)?"""
    if self.snapshot is None or label not in self.labels:
      return False
    note = self.snapshot.notes[self.labels.index(label)]
    return bool(note) and note.get('status') == 'ok'

  def behind_labels(self):
    """Clients the newest step waits for, by the latest reading."""
    if self.snapshot is None:
      return []
    return [self.labels[i] for i in self.snapshot.behind()]
