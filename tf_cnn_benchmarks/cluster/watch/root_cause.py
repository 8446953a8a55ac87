"""The peer failure behind this task's own secondary error.

When a step fails with an error a task gets because a *peer* failed
(peer_failures.is_secondary), the main thread asks here who failed first:
a peer's own note on the progress board says most; else a peer that is
gone (refused REFUSALS_TO_GONE times in a row), else one that cannot be
reached. The answer is an endings.Ending, so the task ends with the status
and exit code of the cause (a partition: unreachable, 4), as it would from
the watchdog.

The secondary error often arrives *before* its cause can be seen: a killed
process resets its connections while its listening port still accepts for
a moment (it is still dying), and a peer whose step failed posts its note
only after its own error reached it, while the others' collectives were
aborted at once. So ``find`` keeps looking (board, then probes, every
half second) until a peer's failure is known, for at most
PEER_FAILURE_WAIT_SECONDS (plus one round in progress). Only then may a
secondary error name this task itself: never while a peer's failure can
still be learned within that bound. A peer's provisional note (its
failure known, its details still being found) is the answer only when no
fuller one comes within the same bound.

A *frozen* peer (a stopped process: its kernel accepts connections, its
server answers nothing) shows on neither the board nor a TCP probe, and a
call to it ends by its RPC deadline (a board write: 10 s), before the
watchdog's stall would name it (the soak's seeds 7138 and 7158: worker1
then blamed itself, "Operation timed out."). So, beside the rounds, every
peer is asked for a gRPC answer (reachability.frozen_peers), and one that
gave none is asked again at once: a peer silent for both asks (about
4 s straight, FROZEN_ASK_SECONDS each) is the cause when nothing else
explains the error by the end of the wait, named as the watchdog would:
stalled. The asks run in a thread of their own so that they take no time
from the rounds (a partitioned peer's probes take their whole timeout);
the search waits for them at most FROZEN_ASK_SECONDS past its own end.
"""

import threading
import time

import tensorflow as tf

from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks.cluster.watch import peer_failures
from tf_cnn_benchmarks.cluster.watch import reachability

# How long a secondary error waits for the peer failure behind it (its
# note, or its port refused in a row). Documented in docs/cluster.md.
PEER_FAILURE_WAIT_SECONDS = 4.0
_BOARD_READ_MS = 2000
# Pause between two rounds (a refusal counts after REFUSALS_TO_GONE).
_PROBE_PAUSE_SECONDS = 0.5
# How long each of the two asks waits for a peer's gRPC answer.
FROZEN_ASK_SECONDS = 2.0


def find(sess, board, labels, own_index, peers, exc):
  """The root cause's endings.Ending, or None when every peer looks fine
  for PEER_FAILURE_WAIT_SECONDS.

  ``labels``: the board's client labels; ``peers``: {label: address} of
  every other task of the cluster.
  """
  own_error = '%s: %s' % (type(exc).__name__, failures.first_line(exc))
  deadline = time.monotonic() + PEER_FAILURE_WAIT_SECONDS
  left_ok = set()  # peers that finished normally: a closed port is fine
  failing = {}  # label -> (probes failed in a row, first such round, why)
  rounds = 0
  provisional = None
  frozen = _FrozenAsks(peers)
  while True:
    remaining_ms = (deadline - time.monotonic()) * 1000
    ending, final = _from_notes(sess, board, labels, own_index, left_ok,
                                max(200, min(_BOARD_READ_MS, remaining_ms)))
    if ending is not None and final:
      return ending
    provisional = ending or provisional
    for label, reason in reachability.probe_all(peers).items():
      if reason and label not in left_ok:
        count, first, _ = failing.get(label, (0, rounds, None))
        failing[label] = (count + 1, first, reason)
      else:
        failing.pop(label, None)
    lost = {label: state for label, state in failing.items()
            if state[0] >= reachability.REFUSALS_TO_GONE}
    if lost:
      # A peer that is gone explains more than one behind a partition;
      # then the one lost first.
      label = min(lost, key=lambda l: (not reachability.is_gone(lost[l][2]),
                                       lost[l][1], l))
      return endings.Ending(*peer_failures.lost_peer(
          label, peers[label], lost[label][2], own_error,
          labels[own_index]))
    if time.monotonic() >= deadline:
      if provisional is None:
        # Not one that left normally (still closing, it may not answer).
        still = sorted(set(frozen.answer()) - left_ok)
        if still:
          return endings.Ending(*peer_failures.frozen_peer(
              still[0], peers[still[0]], own_error))
      return provisional
    rounds += 1
    time.sleep(_PROBE_PAUSE_SECONDS)


class _FrozenAsks:
  """Asks every peer for a gRPC answer, and the silent ones once more,
  in a thread beside find's rounds (see the module docstring)."""

  def __init__(self, peers):
    self._frozen = {}
    self._thread = threading.Thread(target=self._ask, args=(peers,),
                                    name='frozen-asks', daemon=True)
    self._thread.start()

  def _ask(self, peers):
    silent = reachability.frozen_peers(peers, FROZEN_ASK_SECONDS)
    if silent:
      # Silent twice in a row: a live server slow to answer once on a
      # loaded host is not frozen.
      silent = reachability.frozen_peers(
          {label: peers[label] for label in silent}, FROZEN_ASK_SECONDS)
    self._frozen = silent

  def answer(self):
    """{label: why} of the peers silent for both asks; {} if the asks
    are not done within FROZEN_ASK_SECONDS (they are then left to end)."""
    self._thread.join(FROZEN_ASK_SECONDS)
    return {} if self._thread.is_alive() else self._frozen


def _from_notes(sess, board, labels, own_index, left_ok, timeout_ms):
  """(the Ending a peer's failure note on the board gives, or None; is
  that note final); adds the peers that left with an "ok" note to
  ``left_ok``."""
  try:
    snapshot = board.read(sess, int(timeout_ms))
  except tf.errors.OpError:
    return None, False  # The board's host may be the one that is gone.
  for i, note in enumerate(snapshot.notes):
    if i == own_index or not note:
      continue
    status = note.get('status')
    if status == 'ok':
      left_ok.add(labels[i])
      continue
    return endings.Ending(
        endings.after_peer_left(status),
        peer_failures.from_peer_note(labels[i], status, note.get('failure'))
    ), not note.get('provisional')
  return None, False
