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
then blamed itself, "Operation timed out."). So the peers are also asked
for a gRPC answer at the start and at the end of the wait; one frozen both
times (PEER_FAILURE_WAIT_SECONDS apart, as the stall detector asks twice)
is the cause, named as the watchdog would: stalled.
"""

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
  frozen = reachability.frozen_peers(peers)  # a few ms unless one is
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
          label, peers[label], lost[label][2], own_error))
    if time.monotonic() >= deadline:
      if provisional is None and frozen:
        return _still_frozen(peers, frozen, own_error)
      return provisional
    rounds += 1
    time.sleep(_PROBE_PAUSE_SECONDS)


def _still_frozen(peers, frozen_before, own_error):
  """The Ending naming the first of ``frozen_before`` frozen still, or
  None (a live server slow to answer once on a loaded host is not
  frozen)."""
  still = sorted(set(reachability.frozen_peers(
      {label: peers[label] for label in frozen_before})))
  if not still:
    return None
  return endings.Ending(*peer_failures.frozen_peer(
      still[0], peers[still[0]], own_error))


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
