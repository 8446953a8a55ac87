"""What the main thread is doing, since when, and how long its steps take.

The main thread says what it does (``doing``); the watchdog reads it to
time start-up waits and this task's own work, and to word stall reports.
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
    self._step_seconds = collections.deque(maxlen=20)  # the latest steps

  @contextlib.contextmanager
  def doing(self, text, step=False):
    """The main thread is doing ``text`` (a step when ``step``)."""
    with self._lock:
      previous = self._current[0]
      started = time.monotonic()
      self._current = (text, started)
    try:
      yield
    finally:
      now = time.monotonic()
      with self._lock:
        if step:
          self._step_seconds.append(now - started)
        self._current = (previous, now)

  def say(self, text):
    """Renames the current activity (same start time)."""
    with self._lock:
      self._current = (text, self._current[1])

  def begin(self, text):
    """A new activity starts now (outside any ``doing``)."""
    with self._lock:
      self._current = (text, time.monotonic())

  def current(self):
    """(what, since when: time.monotonic())."""
    with self._lock:
      return self._current

  def typical_step_seconds(self):
    with self._lock:
      steps = list(self._step_seconds)
    return statistics.median(steps) if steps else 0.0
