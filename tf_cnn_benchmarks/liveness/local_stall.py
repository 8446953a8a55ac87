"""A single process stuck in one activity: report what is blocked, then end.

When the main thread has done one thing (a step, initialising, a save) for
--stall_timeout, the run prints a stall report that says whether it waits
for input or computes. The evidence: the process's CPU time over the
stall window (a pipeline blocked on a read uses none; a slow model uses
cores), and the file under --data_dir a thread waits on, opening or
reading it (e.g. a FIFO, or a shard on a hung network file system), or
else the files it has open there (waiting_files.py).
Synthetic data is made on the device, so a run on it can only be blocked
in compute. What follows the report is stall_policy.py's, as for a
cluster task.
"""

import os

from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks.liveness import stall_policy
from tf_cnn_benchmarks.liveness import waiting_files

# Below this many cores busy on average over the stall, the process is
# waiting (for input, or a lock), not computing.
BUSY_CORES = 0.25


def _cpu_seconds():
  times = os.times()
  return times.user + times.system


class LocalStall:

  def __init__(self, params, activity, say, cpu_seconds=_cpu_seconds):
    """``activity``: the run's activity.Activity; ``say(line)`` prints."""
    self.params = params
    self.activity = activity
    self._say = say
    self._cpu_seconds = cpu_seconds
    # Resolved now, while --data_dir answers: a stall report must not
    # stat a folder whose file system may be the thing that hangs.
    self._data_root = (os.path.realpath(params.data_dir) if params.data_dir
                       else None)
    self._since = None          # the activity being timed (its start)
    self._window = (0.0, 0.0)   # (monotonic, CPU seconds) when first seen
    self._reported_at = None

  def check(self, now):
    """An Ending once the stall has outlasted its report; else None."""
    stall_timeout = self.params.stall_timeout
    doing, since = self.activity.current()
    if since != self._since:
      self._since, self._window = since, (now, self._cpu_seconds())
      if self._reported_at is not None:
        self._say('Progress resumed after the stall report; carrying on.')
        self._reported_at = None
    if not stall_timeout or self.activity.idle():
      return None
    doing_for = now - since
    if doing_for < stall_timeout:
      return None
    action = stall_policy.next_action(now, self._reported_at, stall_timeout,
                                      self.params.stall_shutdown_timeout)
    if action == stall_policy.REPORT:
      self._reported_at = now
      self._say('Stall report: no progress for %.0f s (--stall_timeout=%g).'
                % (doing_for, stall_timeout))
      self._say('  this run: %s, for %.0f s' % (doing, doing_for))
      self._say('  blocked on %s' % self.diagnosis(now))
      self._say(stall_policy.shutdown_line(
          self.params.stall_shutdown_timeout, 'run'))
    elif action == stall_policy.END:
      return endings.Ending(endings.STALLED, failures.failure(
          'Stalled', 'no progress for %.0f s while %s; blocked on %s.' % (
              doing_for, doing, self.diagnosis(now)), None,
          'If the input is at fault, check that the files under --data_dir '
          'can be read (a FIFO, a hung network file system); if steps are '
          'just slow, raise --stall_timeout.'))
    return None

  def diagnosis(self, now):
    """'input: ...' or 'compute: ...', with the evidence."""
    started, cpu = self._window
    seconds = max(now - started, 1e-9)
    used = max(self._cpu_seconds() - cpu, 0.0)
    busy = used / seconds >= BUSY_CORES
    cpu_words = '%.1f CPU s in the last %.0f s' % (used, seconds)
    if not self._data_root:
      return ('compute (synthetic data cannot block on input; %s: %s)' % (
          cpu_words, 'computing' if busy else 'idle, so stuck inside '
          'TensorFlow rather than slow'))
    if busy:
      return ('compute (or input preprocessing): the process is busy, %s'
              % cpu_words)
    waiting = waiting_files.waited_on_under(self._data_root)
    if waiting:
      files = 'a thread waits on the file system: %s' % ', '.join(waiting)
    else:
      reading = waiting_files.open_under(self._data_root)
      files = ('open under --data_dir: %s' % ', '.join(reading) if reading
               else 'no file under --data_dir is open')
    return 'input: the process waits without computing (%s); %s' % (
        cpu_words, files)
