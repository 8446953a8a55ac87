"""How a cluster task words a failure that began in another task.

In a cluster one task's failure makes the others fail too, with secondary
errors that say nothing about the cause ("Socket closed", "Cancelled",
"Attempted to use a closed Session", a deadline exceeded). ``is_secondary``
recognises them, so that the first failure, with its task and its original
error, is what the user sees: from the failed task's note on the progress
board (``from_peer_note``), or from a probe that finds the peer gone or
unreachable (``lost_peer``; reachability.is_gone decides which). No
TensorFlow at import: the launcher uses this module too.
"""

import signal

from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks.cluster.watch import reachability
from tf_cnn_benchmarks.failures import failure
from tf_cnn_benchmarks.failures import printable

# What an unreachable peer means, in the words every task uses (the
# workers' failure, a ps's exit line): not a crash, so do not look for one.
PARTITION_WORDS = ('no answer at all (a network partition or a frozen '
                   'host), not a crash')

# The failure type of a task whose own host has no route to its peers.
CUT_OFF = 'CutOff'

# Words of errors caused by another task's failure, whatever their type.
# A collective abort keeps the *cause's* type (e.g. InvalidArgumentError
# for a peer's corrupt record): only its words say it came from elsewhere.
_SECONDARY_PHRASES = ('closed Session', 'Session has been closed',
                      'Socket closed', 'Connection reset',
                      'failed to connect to all addresses',
                      'Collective ops is aborted')


def is_secondary(exc):
  """Is ``exc`` the kind of error a task gets because a *peer* failed?"""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if isinstance(exc, (tf.errors.UnavailableError, tf.errors.AbortedError,
                      tf.errors.CancelledError,
                      tf.errors.DeadlineExceededError)):
    return True
  text = str(exc)
  return any(phrase in text for phrase in _SECONDARY_PHRASES)


def from_peer_note(label, status, peer_failure):
  """This task's failure when peer ``label`` left first with ``status``.

  The peer's note carries its failure; when that already names another
  task (the peer ended because of it, or it is a stall's culprit), it is
  passed on unchanged, so every task names the same root.
  """
  peer_failure = _printable_failure(peer_failure)
  root = peer_failure.get('task') or label
  message = peer_failure.get('message') or 'no message'
  if root != label or status in ('stalled', 'unreachable'):
    return failure(peer_failure.get('type') or 'PeerFailed', message, root,
                   peer_failure.get('hint'))
  verb = 'was interrupted' if status == 'interrupted' else 'failed'
  return failure(peer_failure.get('type') or 'PeerFailed',
                 '%s %s first: %s' % (label, verb, message), label,
                 peer_failure.get('hint'))


def _printable_failure(peer_failure):
  """A peer's failure as words this task may print: whoever reaches the
  board's host can write a note, so each field is one line of text
  (failures.printable), never lines of ours (a forged root cause or a
  guard's marked line, read by the launcher)."""
  if not isinstance(peer_failure, dict):
    peer_failure = {'message': peer_failure} if peer_failure else {}
  return {key: printable(value) if value else None
          for key, value in peer_failure.items()
          if key in ('type', 'message', 'task', 'hint')}


def peer_gone(label, address, own_error=None):
  seen = (' (this task then saw %s)' % own_error) if own_error else ''
  return failure(
      'PeerGone',
      '%s is gone: its server at %s refuses connections, so its process '
      'crashed or was killed; it failed first%s.' % (label, address, seen),
      label,
      'Look for %s\'s own error in its output; if it printed none, it was '
      'killed (by a user, a job scheduler, or the kernel\'s out-of-memory '
      'killer: see `dmesg`).' % label)


def peer_unreachable(label, address, reason, own_error=None):
  seen = (' (this task then saw %s)' % own_error) if own_error else ''
  return failure(
      'PeerUnreachable',
      '%s is unreachable at %s: %s; it was lost first (probe: %s)%s.' % (
          label, address, PARTITION_WORDS, reason, seen),
      label,
      'The network between this host and %s failed (or its host is down '
      'or frozen); check the link and firewalls.' % label)


def cut_off(own_label, label, address, reason, own_error=None):
  """This task's own host has no route to peer ``label``: it is the one
  cut off, so the failure is its own (the peers name it too)."""
  seen = (' (this task then saw %s)' % own_error) if own_error else ''
  return failure(
      CUT_OFF,
      '%s\'s host has no route to %s at %s (probe: %s): its own network '
      'link is down or its routes are gone, so %s is the task cut off, not '
      '%s%s.' % (own_label, label, address, reason, own_label, label, seen),
      own_label,
      'Check the network interface and routes of %s\'s host (`ip link`, '
      '`ip route`).' % own_label)


def lost_peer(label, address, reason, own_error=None, own_label=None):
  """(status, failure) of task ``own_label`` that lost peer ``label``,
  whose probe said ``reason``: gone (its process died: the run failed) or
  unreachable (a partition: status unreachable, exit 4). In a partition
  the side with no route of its own names itself (cut_off), so both sides
  name the same task."""
  if reachability.is_gone(reason):
    return endings.FAILED, peer_gone(label, address, own_error)
  if own_label and reachability.no_route_from_here(address):
    return endings.UNREACHABLE, cut_off(own_label, label, address, reason,
                                        own_error)
  return endings.UNREACHABLE, peer_unreachable(label, address, reason,
                                               own_error)


def frozen_peer(label, address, own_error):
  """(status, failure) of a task whose secondary error came from peer
  ``label`` being frozen (reachability.FROZEN): the stall the watchdog
  would have named, named before its end (status stalled)."""
  return endings.STALLED, failure(
      'Stalled',
      '%s is frozen: %s (its server at %s); this task then saw %s.'
      % (label, reachability.FROZEN, address, own_error),
      label,
      'Look at %s\'s output and state (e.g. py-spy dump; `ps -o stat` '
      'shows T for a stopped process).' % label)


def killed_by_signal(label, signum):
  """Words for a task that died of a signal without a word of its own."""
  try:
    name = signal.Signals(signum).name
  except ValueError:
    name = 'signal %d' % signum
  if signum == signal.SIGKILL:
    why = ('by a user, a job scheduler, or the kernel\'s out-of-memory '
           'killer (see `dmesg`)')
  else:
    why = 'it printed no error of its own'
  return '%s was killed by %s: %s' % (label, name, why)
