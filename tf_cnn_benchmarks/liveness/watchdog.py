"""A run's watchdog: no run hangs silently, every end is explained.

A thread beside the main thread, started with the stop request (so from
the first phase of the run), for local runs and cluster tasks alike. The
main thread spends its time in calls that may never return (a step
blocked on input, a synchronous step whose peer died, a session whose peer
is absent). Once a second, or at once for a signal, the thread asks:

  * a signal (stop_request.py): acknowledged at once; a second one ends
    the run now; one the main thread has not acted on within
    SIGNAL_GRACE_SECONDS ends it as "interrupted";
  * a slow phase (phases.py): announced;
  * the runtime's check (``watch_with``): a local run's stall
    (local_stall.py); a cluster task adds start-up, peers and the
    cluster's stalls (cluster/watch/task_checks.py).

A check returns an endings.Ending or None; the first Ending goes to
run_exit.RunExit.end, the one place a run ends from this thread.

The runtime's check runs in a thread of its own (``_Checker``), which this
thread waits for while still watching for a signal: a check may block for
seconds (a board read, a name lookup, a frozen peer's gRPC call), and a
signal must end the run within SIGNALLED_EXIT_SECONDS whatever the check
is doing. A check still running when the signal ends the run is left to
die with the process.
"""

import threading
import time
import traceback

from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.liveness import activity
from tf_cnn_benchmarks.liveness import early_signals
from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks.liveness import phases
from tf_cnn_benchmarks.liveness import run_exit
from tf_cnn_benchmarks.liveness import stop_request

TICK_SECONDS = 1.0
# A signal the main thread has not acted on in this long is acted on here.
SIGNAL_GRACE_SECONDS = stop_request.SIGNAL_GRACE_SECONDS
# A run sent SIGINT/SIGTERM has ended within this long, whatever it was
# doing: the main thread's grace, a tick, the goodbyes to its peers, and a
# margin to write the record on a loaded machine. Whoever stops a run
# (the launcher, the ssh guard) waits this long before SIGKILL, which
# would leave no record.
SIGNALLED_EXIT_SECONDS = (SIGNAL_GRACE_SECONDS + TICK_SECONDS +
                          run_exit.LEAVING_SECONDS + 4.0)
# While a check runs, a signal is looked for this often.
_CHECK_POLL_SECONDS = 0.05


class _Checker:
  """Runs the runtime's check in its own thread, one check at a time."""

  def __init__(self):
    self._thread = None
    self._outcome = None  # ('ending', Ending or None) or ('error', exc)

  def run(self, check, now, interrupted):
    """check(now)'s Ending (None: none, or ``interrupted()`` became true
    before the check returned; it is then left running, and the next call
    waits for it instead of starting another). Re-raises its exception."""
    if self._thread is None:
      self._outcome = None

      def call():
        try:
          self._outcome = ('ending', check(now))
        except Exception as e:  # pylint: disable=broad-except
          self._outcome = ('error', e)
      self._thread = threading.Thread(target=call, name='watchdog-check',
                                      daemon=True)
      self._thread.start()
    while self._thread.is_alive():
      self._thread.join(_CHECK_POLL_SECONDS)
      if self._thread.is_alive() and interrupted():
        return None
    self._thread = None
    kind, value = self._outcome
    if kind == 'error':
      raise value
    return value


class Watchdog:
  """Use as ``with Watchdog(run_exit, say) as watch:`` around the run."""

  def __init__(self, run_exit, say):
    """``run_exit``: run_exit.RunExit; ``say(line)`` prints."""
    self.exit = run_exit
    self._say = say
    self._said = set()
    self._check = None
    self._checker = _Checker()
    self.activity = activity.Activity()
    self.phases = phases.Phases(self.activity, say)
    self.stop_request = stop_request.StopRequest(self._acknowledge)
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._loop, name='watchdog',
                                    daemon=True)

  # -- main thread

  def __enter__(self):
    # A process started by an entry point has had its stop request since
    # its first line: a signal that came while it started is counted there
    # and stops the run at its first phase.
    early = early_signals.take_over(self._acknowledge)
    if early is not None:
      self.stop_request = early
    else:
      self.stop_request.__enter__()
    self._thread.start()
    return self

  def __exit__(self, *exc):
    self._stop.set()
    self.stop_request.wake()
    self._thread.join(timeout=2 * TICK_SECONDS)
    self.stop_request.__exit__(*exc)

  def watch_with(self, check):
    """``check(now)`` -> Ending or None, asked every tick (None: none)."""
    self._check = check

  def phase(self, key, words=None, announce=True):
    """Enters a phase (phases.Phases.phase), unless a stop was requested:
    a run stops at the next phase even if no step comes."""
    self.check_stop()
    return self.phases.phase(key, words, announce)

  def check_stop(self):
    self.stop_request.check()

  def doing(self, text, step=False, idle=False):
    return self.activity.doing(text, step, idle)

  def signal_received(self):
    """SIGINT/SIGTERM's name if one arrived (either thread may ask)."""
    return self.stop_request.received()

  # -- either thread

  def say(self, line):
    """Prints ``line`` where the run's report goes."""
    self._say(line)

  def _acknowledge(self, name, count):
    """Said at once: a run that takes seconds to stop must not look hung."""
    if count == 1:
      self._say('Stopping: got %s while %s; send it again to stop now.' % (
          name, self.activity.current()[0]))
    elif count == 2:
      self._say('Stopping now: got %s again.' % name)

  # -- watchdog thread

  def _say_once(self, key, line):
    if key not in self._said:
      self._said.add(key)
      self._say(line)

  def _loop(self):
    while not self._stop.is_set():
      self.stop_request.wait(self._wait_seconds(), self._stop)
      if self._stop.is_set():
        return
      # A library that took SIGINT/SIGTERM over gives them back within a
      # tick (stop_request.py).
      self.stop_request.reclaim()
      try:
        ending, anyway = self._next_ending(time.monotonic())
      except Exception:  # pylint: disable=broad-except
        # The watchdog must outlive its own bugs; say it once.
        self._say_once('crash', 'watchdog error (ignored): %s' %
                       traceback.format_exc().strip().splitlines()[-1])
        continue
      if ending is not None:
        self.exit.end(ending.after_signal(self.signal_received()), anyway)
        return  # The main thread ended the run first: nothing to watch.

  def _wait_seconds(self):
    """A tick, or less: a signal's grace ends on time."""
    at = self.stop_request.at
    if at is None:
      return TICK_SECONDS
    left = at + SIGNAL_GRACE_SECONDS - time.monotonic()
    return min(TICK_SECONDS, max(left, 0.05))

  def _next_ending(self, now):
    """(the Ending the run must take now or None, whether to leave even
    if the main thread has recorded the run)."""
    doing = self.activity.current()[0]
    if self.signal_received():
      # Being stopped: the main thread gets a moment to stop by itself
      # (unless the user insists); nothing else is worth reporting now.
      if self.stop_request.count >= 2:
        return self._interrupted(doing, 'a second signal'), True
      if now - self.stop_request.at >= SIGNAL_GRACE_SECONDS:
        return self._interrupted(doing, 'the run did not stop by itself '
                                 'within %g s' % SIGNAL_GRACE_SECONDS), False
      return None, False
    self.phases.announce(now)
    check = self._check
    if check is None:
      return None, False
    return self._checker.run(check, now, lambda: (
        self._stop.is_set() or self.signal_received())), False

  def _interrupted(self, doing, why):
    return endings.Ending(endings.INTERRUPTED, failures.failure(
        'Interrupted', 'stopped by %s while %s (%s; ended by the watchdog)'
        % (self.stop_request.name, doing, why)))
