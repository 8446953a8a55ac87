"""A cluster task's checks: what the run's watchdog checks in a cluster.

The run's watchdog (liveness/watchdog.py) already acts on signals, from the
task's first phase, and announces slow phases. From the moment the session
is opened it also asks this object, once a second, whether the run must
end, in this order:

  * start-up (startup_guard.py): one start-up activity lasting past
    --startup_timeout;
  * training (cluster_watch.py): a peer's failure note, or a peer gone;
  * a stall (stall_detector.py): no progress anywhere, reported first,
    ended after --stall_shutdown_timeout.

Each check returns an endings.Ending or None; the run's watchdog hands the
first Ending to the run's exit (liveness/run_exit.py), which records the
run, tells the peers and leaves with os._exit.
"""

import time

from tf_cnn_benchmarks.cluster.watch import cluster_watch
from tf_cnn_benchmarks.cluster.watch import peer_prober
from tf_cnn_benchmarks.cluster.watch import stall_detector
from tf_cnn_benchmarks.cluster.watch import startup_guard

STARTING, TRAINING, FINISHING = 'starting', 'training', 'finishing'
CREATING_SESSION = startup_guard.CREATING_SESSION


class TaskChecks:
  """The cluster's checks; see the module docstring."""

  def __init__(self, role, params, startup, peers, session_peers, run_watch,
               note_peer_failure, note_stragglers=None):
    """``startup``: the task's deadlines.StartupClock;
    ``peers``: {label: address} of every other task of the cluster;
    ``session_peers``: those this task's session waits for when created;
    ``run_watch``: the run's liveness/watchdog.Watchdog (its activity, its
    stop request, its output). ``note_peer_failure(failure)`` records a
    peer's failure this task carries on after (asynchronous).
    """
    self._run_watch = run_watch
    self._note_peer_failure = note_peer_failure
    self._say_line = run_watch.say
    self._note_stragglers = note_stragglers
    self._said = set()
    self._phase = STARTING
    self.activity = run_watch.activity
    prober = peer_prober.PeerProber(peers, role.task_name)
    self.startup = startup_guard.StartupGuard(role, startup, prober,
                                              session_peers)
    self.watch = cluster_watch.ClusterWatch(role, prober, self._carry_on,
                                            self._report_stragglers)
    self.stall = stall_detector.StallDetector(role, params, self.watch,
                                              self._print)

  # -- main thread

  def start(self, around=None):
    """The run's watchdog asks this object from now on (``around(check)``:
    the check a test fault wraps it in, test_hooks.fault_injection)."""
    self._run_watch.watch_with(around(self._check) if around else self._check)

  def stop(self):
    self._run_watch.watch_with(None)

  def doing(self, text, step=False):
    """The main thread is doing ``text`` (a step when ``step``)."""
    return self.activity.doing(text, step)

  def rename_activity(self, text):
    """Renames the current activity (same start time)."""
    self.activity.rename(text)

  def training_started(self, sess, board, labels, own_index):
    self.watch.start(sess, board, labels, own_index, time.monotonic())
    self.activity.begin('between steps')
    self._phase = TRAINING

  def training_ended(self):
    self._phase = FINISHING
    self.stall.forget_report()

  def signal_received(self):
    """SIGINT/SIGTERM's name if one arrived (either thread may ask)."""
    return self._run_watch.signal_received()

  # -- watchdog thread

  def _print(self, lines):
    for line in lines:
      self._say_line(line)

  def _say_once(self, key, line):
    if key not in self._said:
      self._said.add(key)
      self._say_line(line)

  def _carry_on(self, label, run_failure):
    """Asynchronous training: say it once, record it, go on."""
    if ('peer', label) in self._said:
      return
    self._say_once(('peer', label), '%s; the other workers carry on '
                   '(asynchronous training).' % run_failure['message'])
    self._note_peer_failure(run_failure)

  def _report_stragglers(self, line, found):
    """The chief's stragglers (stragglers.py): said, kept for the record."""
    if line is not None:
      self._say_line(line)
    if self._note_stragglers is not None:
      self._note_stragglers(found)

  def _check(self, now):
    """The Ending the run must take now, or None."""
    phase = self._phase
    doing, since = self.activity.current()
    if phase == STARTING:
      return self.startup.check(now, doing, now - since)
    if phase == TRAINING:
      ending = self.watch.check(now, self.activity.typical_step_seconds())
      if ending is not None:
        return ending
    return self.stall.check(now, phase == TRAINING, doing, now - since)
