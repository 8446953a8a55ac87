"""The words of a stall: where every task is, who is missing, what we wait for.

Pure formatting and blame, no TensorFlow: the watchdog (and ps 0) gather
the facts — a progress board snapshot (progress_board.py), probes of the peers
(reachability.py), what this task's main thread is doing — and this module
turns them into the report and names the task the stall waits for.
"""

from tf_cnn_benchmarks.cluster.watch import reachability
from tf_cnn_benchmarks.liveness import stall_policy
from tf_cnn_benchmarks.variable_update.sync_kind import SyncKind
# When a stall is reported or ended is decided once, for local runs too.
from tf_cnn_benchmarks.liveness.stall_policy import END  # pylint: disable=unused-import
from tf_cnn_benchmarks.liveness.stall_policy import next_action  # pylint: disable=unused-import
from tf_cnn_benchmarks.liveness.stall_policy import REPORT  # pylint: disable=unused-import


def steps_line(snapshot, labels):
  """'worker0 in step 5, worker1 done with step 4 (between steps), ...'."""
  parts = []
  for i, label in enumerate(labels):
    note = snapshot.notes[i]
    if note is not None:
      parts.append('%s left after step %d (%s)' % (
          label, snapshot.completed[i], note.get('status', '?')))
    elif snapshot.in_step(i):
      parts.append('%s in step %d' % (label, snapshot.started[i]))
    else:
      parts.append('%s done with step %d, not in a step' % (
          label, snapshot.completed[i]))
  return ', '.join(parts)


def waiting_for(role, activity, missing):
  """What a task doing ``activity`` waits for, in words."""
  if not activity.startswith('step '):
    return activity
  who = ' (missing: %s)' % ', '.join(missing) if missing else ''
  if role.job_name == 'controller':
    return '%s: one graph over every worker%s' % (activity, who)
  if role.mode.uses_collectives:
    return '%s: in the all-reduce, which needs every worker%s' % (
        activity, who)
  if role.sync is SyncKind.BARRIER:
    return ('%s: at the step\'s barrier, waiting for every worker to apply '
            'its own update%s' % (activity, who))
  if role.sync is SyncKind.MEAN:
    if role.is_chief:
      return ('%s: waiting for every worker\'s gradient before applying the '
              'update%s' % (activity, who))
    return ('%s: waiting for the sync token (the chief applies the update '
            'once every worker\'s gradient is in)%s' % (activity, who))
  return '%s: reading and updating the variables on the ps tasks' % activity


def unreachable_peers(probes):
  """[(label, address, reason)] of peers a probe could not reach (gone or
  unreachable: reachability.is_gone tells which)."""
  return [(label, address, reason)
          for label, (address, reason) in sorted(probes.items()) if reason]


def with_frozen(probes, frozen):
  """``probes`` ({label: (address, reason)}) with the reason of each peer
  in ``frozen`` ({label: reason}) in place of its TCP probe's "fine"."""
  probes = dict(probes)
  for label, reason in frozen.items():
    probes[label] = (probes[label][0], reason)
  return probes


def culprit(own_label, snapshot, labels, frozen=()):
  """The task a stall waits for: a frozen peer (``frozen``: their labels),
  else the client behind the others on the board, else this task itself."""
  if frozen:
    return sorted(frozen)[0]
  behind = [labels[i] for i in snapshot.behind()] if snapshot else []
  return behind[0] if behind else own_label


def report(own_label, quiet_for, stall_timeout, snapshot, labels, probes,
           board_error, waiting, waiting_for_seconds, shutdown_in,
           snapshot_age=0.0):
  """The stall report's lines (``shutdown_in`` None: report only)."""
  lines = ['Stall report from %s: no step completed in the cluster for '
           '%.0f s (--stall_timeout=%g).' % (own_label, quiet_for,
                                             stall_timeout)]
  if snapshot is not None:
    when = ('' if board_error is None else
            ' (as read %.0f s ago; the board cannot be read now: %s)' % (
                snapshot_age, board_error))
    lines.append('  steps%s: %s' % (when, steps_line(snapshot, labels)))
    behind = [labels[i] for i in snapshot.behind()]
    if behind:
      answering = [l for l in behind if l in probes and not probes[l][1]]
      lines.append('  missing from the newest step: %s%s' % (
          ', '.join(behind),
          ('; %s answer%s its port, so it is alive but stuck' % (
              ', '.join(answering), 's' if len(answering) == 1 else '')
           if answering else '')))
  else:
    lines.append('  steps: unknown, the progress board cannot be read (%s)'
                 % board_error)
  for label, address, reason in unreachable_peers(probes):
    lines.append('  %s: %s' % (reachability.state(reason),
                               reachability.describe(label, address, reason)))
  lines.append('  this task: %s, for %.0f s' % (waiting, waiting_for_seconds))
  lines.append(stall_policy.shutdown_line(shutdown_in, 'cluster'))
  return lines
