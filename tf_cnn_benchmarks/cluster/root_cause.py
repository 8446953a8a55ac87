"""The peer failure behind this task's own secondary error.

When a step fails with an error a task gets because a *peer* failed
(peer_failures.is_secondary), the main thread asks here who failed first:
a peer's own note on the progress board says most; else a peer that is
gone (refused twice), else one that cannot be reached. The answer is an
endings.Ending, so the task ends with the status and exit code of the
cause (a partition: unreachable, 4), as it would from the watchdog.
"""

import time

import tensorflow as tf

from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.cluster import endings
from tf_cnn_benchmarks.cluster import peer_failures
from tf_cnn_benchmarks.cluster import reachability

_BOARD_READ_MS = 2000
# Pause between two rounds of probes (a refusal counts after two).
_PROBE_PAUSE_SECONDS = 0.5


def find(sess, board, labels, own_index, peers, exc):
  """The root cause's endings.Ending, or None when every peer looks fine.

  ``labels``: the board's client labels; ``peers``: {label: address} of
  every other task of the cluster.
  """
  own_error = '%s: %s' % (type(exc).__name__, failures.first_line(exc))
  try:
    snapshot = board.read(sess, _BOARD_READ_MS)
    for i, note in enumerate(snapshot.notes):
      if i != own_index and note and note.get('status') != 'ok':
        status = note.get('status')
        return endings.Ending(
            endings.after_peer_left(status),
            peer_failures.from_peer_note(labels[i], status,
                                         note.get('failure')))
  except tf.errors.OpError:
    pass  # The board's host may be the one that is gone.
  failing = {}  # label -> (address, reason) of peers failing every probe
  for attempt in range(reachability.REFUSALS_TO_GONE):
    if attempt:
      time.sleep(_PROBE_PAUSE_SECONDS)
    for label, reason in reachability.probe_all(peers).items():
      if reason and (attempt == 0 or label in failing):
        failing[label] = (peers[label], reason)
      else:
        failing.pop(label, None)
  if not failing:
    return None
  # A peer that is gone explains more than one behind a partition.
  label = min(failing, key=lambda l: (not reachability.is_gone(failing[l][1]),
                                      l))
  address, reason = failing[label]
  return endings.Ending(*peer_failures.lost_peer(label, address, reason,
                                                 own_error))
