"""The launcher's last words: cluster summary, first failure, exit code.

Everything here reads what the tasks printed (rates, "Run failed:", "Root
cause:") and how they exited; none of it starts or stops a process.
"""

import collections
import re

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.cluster.watch import peer_failures
from tf_cnn_benchmarks.cluster import roles

_OWN_RATE = re.compile(r'^worker(\d+) images/sec: ([0-9.]+)')
_CLUSTER_RATE = re.compile(r'^cluster images/sec: ([0-9.]+)')
_TOTAL = re.compile(r'^total images/sec: ([0-9.]+)')


def _last_match(pattern, lines):
  value = None
  for line in lines:
    m = pattern.match(line)
    if m:
      value = m.groups()
  return value


def summarize(tasks, write):
  """Prints the cluster summary; returns the summed own rates (or None)."""
  write('=' * 10 + ' cluster summary ' + '=' * 10)
  own_rates = []
  chief_total = controller_total = None
  # Which host each task ran on, when they were not all local.
  on_hosts = {str(t.host) for t in tasks} != {'local'}
  for task in tasks:
    code = task.returncode()
    # A stopped task's own exit too: 130 (it stopped and recorded itself)
    # is not a SIGKILL after the grace, nor a remote task whose status
    # never came back.
    state = ('stopped by the launcher: ' if task.stopped_by_launcher
             else '') + task.exit_description()
    detail = ''
    own = _last_match(_OWN_RATE, task.lines)
    if own:
      own_rates.append(float(own[1]))
      detail = '  own images/sec: %s' % own[1]
    chief = _last_match(_CLUSTER_RATE, task.lines)
    if chief:
      chief_total = float(chief[0])
    if task.job == roles.CONTROLLER:
      total = _last_match(_TOTAL, task.lines)
      controller_total = float(total[0]) if total else None
    if task.job == roles.PS and code == 0 and not task.stopped_by_launcher:
      detail = '  (exited by itself)'
    where = '%-20s ' % task.host if on_hosts else ''
    write('%-12s %s%s%s' % (task.label, where, state, detail))
  summed = None
  if controller_total is not None:
    write('Cluster total images/sec: %.2f (the controller\'s total: it '
          'runs every worker\'s steps)' % controller_total)
    summed = controller_total
  elif own_rates:
    summed = sum(own_rates)
    write('Cluster total images/sec: %.2f (sum of the %d workers\' own '
          'rates)' % (summed, len(own_rates)))
  if chief_total is not None and controller_total is None:
    write('Chief\'s estimate from the global step: %.2f images/sec'
          % chief_total)
  first = first_failure_of(tasks)
  if first is not None:
    for line in describe_first_failure(first):
      write(line)
  return summed


def first_failure_of(tasks):
  """The task that failed first, or None.

  The earliest to exit with an error, unless its output names another
  task as the root cause (a secondary failure may exit a moment before
  the failure it reports, e.g. a worker whose peer failed).

  Two tasks that name each other saw a partition from its two sides: the
  task cut off finds every peer unreachable and names one of them, while
  each of the others names it. So the task named by the most failed tasks
  is the cause (a tie keeps the earliest one's word: from inside, two
  tasks cut from each other look alike, unless one of them has no route
  of its own, and then it names itself: peer_failures.cut_off).
  """
  failed = sorted((t for t in tasks if t.failed()),
                  key=lambda t: t.exited_at)
  if not failed:
    return None
  by_label = {t.label: t for t in tasks}
  named = _root_cause(failed[0])
  if named not in by_label:
    return failed[0]
  if _root_cause(by_label[named]) == failed[0].label:
    votes = collections.Counter(_root_cause(t) for t in failed)
    if votes[failed[0].label] > votes[named]:
      return failed[0]
  return by_label[named]


def _root_cause(task):
  """The task a task's output names as its failure's root cause, or None."""
  named = _last_match(failures.ROOT_CAUSE_RE, task.lines)
  return named[0] if named else None


def describe_first_failure(task):
  """Lines naming the first failure: the task's own error, or its death."""
  own = [l for l in task.lines
         if l.startswith(('Run failed: ', 'Run stalled: ', 'Hint: '))]
  code = task.returncode()
  if not own and code is not None and code < 0:
    return ['First failure: ' +
            peer_failures.killed_by_signal(task.label, -code)]
  if not own:
    return ['First failure: %s (%s; it printed no error)' % (
        task.label, task.exit_description())]
  first, hints = own[0], [l for l in own[1:] if l.startswith('Hint: ')]
  return ['First failure: %s: %s' % (task.label, first.split(': ', 1)[1])
          ] + hints[:1]


def exit_code(tasks):
  """The first failure's code (a task killed by a signal: RUN_FAILED)."""
  first = first_failure_of(tasks)
  if first is not None:
    code = first.returncode()
    return code if code and code > 0 else exit_codes.RUN_FAILED
  if any(t.stopped_by_launcher for t in tasks):
    return exit_codes.RUN_FAILED
  return exit_codes.OK
