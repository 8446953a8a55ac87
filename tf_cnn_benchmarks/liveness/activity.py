"""What the main thread is doing, since when, and how long its steps take.

The main thread says what it does (``doing``); the watchdog reads it to
time start-up waits and the run's own work, to word stall reports and to
say what a signal interrupted. An ``idle`` activity (waiting by design,
e.g. for a newer checkpoint) is never a stall.
"""

import collections
import contextlib
import statistics
import threading
import time


class Activity:

  def __init__(self):
    self._lock = threading.Lock()
    self._current = ('starting up', time.monotonic())
    self._idle = False
    self._step_seconds = collections.deque(maxlen=20)  # the latest steps

  @contextlib.contextmanager
  def doing(self, text, step=False, idle=False):
    """The main thread is doing ``text`` (a step when ``step``; None: the
    same as now, started afresh)."""
    with self._lock:
      previous, was_idle = self._current[0], self._idle
      started = time.monotonic()
      self._current = (previous if text is None else text, started)
      self._idle = idle
    try:
      yield
    finally:
      now = time.monotonic()
      with self._lock:
        if step:
          self._step_seconds.append(now - started)
        self._current, self._idle = (previous, now), was_idle

  def rename(self, text):
    """Renames the current activity (same start time)."""
    with self._lock:
      self._current = (text, self._current[1])

  def begin(self, text):
    """A new activity starts now (outside any ``doing``)."""
    with self._lock:
      self._current, self._idle = (text, time.monotonic()), False

  def current(self):
    """(what, since when: time.monotonic())."""
    with self._lock:
      return self._current

  def idle(self):
    """Whether the current activity is waiting by design."""
    with self._lock:
      return self._idle

  def typical_step_seconds(self):
    with self._lock:
      steps = list(self._step_seconds)
    return statistics.median(steps) if steps else 0.0
