"""A cluster task's watchdog: no task hangs silently, every end is explained.

A thread beside the main thread, which spends its time inside TensorFlow
calls that may never return (a synchronous step whose peer died, a
session whose peer is absent, a link that went down). Once a second it
asks, in this order, whether the run must end:

  * a signal (signal_relay.py): SIGINT/SIGTERM that the main thread has
    not acted on within SIGNAL_GRACE_SECONDS ends the task as
    "interrupted";
  * start-up (startup_guard.py): one start-up activity lasting past
    --startup_timeout;
  * training (cluster_watch.py): a peer's failure note, or a peer gone;
  * a stall (stall_detector.py): no progress anywhere, reported first,
    ended after --stall_shutdown_timeout.

Each check returns an endings.Ending or None; the first Ending is handed to
``end_run`` (task_exit.TaskExit.end), the one place a task ends from this
thread: it records the run, tells the peers and leaves with os._exit.
"""

import sys
import threading
import time
import traceback

from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.cluster import activity
from tf_cnn_benchmarks.cluster import cluster_watch
from tf_cnn_benchmarks.cluster import endings
from tf_cnn_benchmarks.cluster import peer_prober
from tf_cnn_benchmarks.cluster import signal_relay
from tf_cnn_benchmarks.cluster import stall_detector
from tf_cnn_benchmarks.cluster import startup_guard

TICK_SECONDS = 1.0
# A signal the main thread has not acted on in this long is acted on here.
SIGNAL_GRACE_SECONDS = 2.0

STARTING, TRAINING, FINISHING = 'starting', 'training', 'finishing'
CREATING_SESSION = startup_guard.CREATING_SESSION


class Watchdog:
  """Watches this task and the cluster; see the module docstring."""

  def __init__(self, role, params, peers, session_peers, end_run,
               note_peer_failure, out=None, note_stragglers=None):
    """``peers``: {label: address} of every other task of the cluster;
    ``session_peers``: those this task's session waits for when created.

    ``end_run(ending)`` ends the process; it returns only when the main
    thread has already ended the run itself. ``note_peer_failure(failure)``
    records a peer's failure this task carries on after (asynchronous).
    """
    self._end_run = end_run
    self._note_peer_failure = note_peer_failure
    self._note_stragglers = note_stragglers
    self._out = out or sys.stdout
    self._said = set()
    self._phase = STARTING
    self.activity = activity.Activity()
    self.signals = signal_relay.SignalRelay()
    prober = peer_prober.PeerProber(peers)
    self.startup = startup_guard.StartupGuard(role, params, prober,
                                              session_peers)
    self.watch = cluster_watch.ClusterWatch(role, prober, self._carry_on,
                                            self._report_stragglers)
    self.stall = stall_detector.StallDetector(role, params, self.watch,
                                              self._print)
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._loop, name='watchdog',
                                    daemon=True)

  # -- main thread

  def start(self):
    self.signals.start()
    self._thread.start()

  def stop(self):
    self._stop.set()
    self._thread.join(timeout=2 * TICK_SECONDS)
    self.signals.stop()

  def doing(self, text, step=False):
    """The main thread is doing ``text`` (a step when ``step``)."""
    return self.activity.doing(text, step)

  def say(self, text):
    """Renames the current activity (same start time)."""
    self.activity.say(text)

  def training_started(self, sess, board, labels, own_index):
    self.watch.start(sess, board, labels, own_index, time.monotonic())
    self.activity.begin('between steps')
    self._phase = TRAINING

  def training_ended(self):
    self._phase = FINISHING
    self.stall.forget_report()

  def signal_received(self):
    """SIGINT/SIGTERM's name if one arrived (either thread may ask)."""
    return self.signals.received()

  # -- watchdog thread

  def _print(self, lines):
    for line in lines:
      self._out.write(line + '\n')
    self._out.flush()

  def _say_once(self, key, line):
    if key not in self._said:
      self._said.add(key)
      self._print([line])

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
      self._print([line])
    if self._note_stragglers is not None:
      self._note_stragglers(found)

  def _loop(self):
    while not self._stop.is_set():
      self.signals.wait(TICK_SECONDS, self._stop)
      if self._stop.is_set():
        return
      try:
        ending = self._check(time.monotonic())
      except Exception:  # pylint: disable=broad-except
        # The watchdog must outlive its own bugs; say it once.
        self._say_once('crash', 'watchdog error (ignored): %s' %
                       traceback.format_exc().strip().splitlines()[-1])
        continue
      if ending is not None:
        self._end_run(ending.after_signal(self.signal_received()))
        return  # The main thread ended the run first: nothing to watch.

  def _check(self, now):
    """The Ending the run must take now, or None."""
    phase = self._phase
    doing, since = self.activity.current()
    if self.signal_received():
      # Being stopped: the main thread gets a moment to stop by itself;
      # nothing else is worth reporting now.
      if now - self.signals.at >= SIGNAL_GRACE_SECONDS:
        return self._interrupted(doing)
      return None
    if phase == STARTING:
      return self.startup.check(now, doing, now - since)
    if phase == TRAINING:
      ending = self.watch.check(now, self.activity.typical_step_seconds())
      if ending is not None:
        return ending
    return self.stall.check(now, phase == TRAINING, doing, now - since)

  def _interrupted(self, doing):
    return endings.Ending(endings.INTERRUPTED, failures.failure(
        'Interrupted', 'stopped by %s while %s (TensorFlow did not return; '
        'ended by the watchdog)' % (self.signals.name, doing)))
