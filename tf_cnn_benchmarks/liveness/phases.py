"""The phases of a run: timed for the run record, announced when slow.

A run that prints nothing for a minute looks hung. Each phase (building
the graph, creating the session, each warm-up step of a slow model, ...)
is announced by the watchdog thread once it has lasted
ANNOUNCE_AFTER_SECONDS (and again every REPEAT_SECONDS), and the main
thread prints its duration when such a phase ends. Fast phases print
nothing, so a quick run's output is unchanged. Every named phase's
duration goes to the run record (``phases``).
"""

import contextlib
import dataclasses
import threading
import time

ANNOUNCE_AFTER_SECONDS = 5.0
REPEAT_SECONDS = 30.0

# Record key -> the words of the phase. One table, so every runtime names
# a phase the same way.
WORDS = {
    'server_start': 'starting this task\'s server',
    'input': 'opening the input',
    'graph_build': 'building the graph',
    'peers': 'waiting for the peers',
    'session': 'creating the session',
    'initialisation': 'initialising',
    'warm_up': 'warming up',
    'timed_loop': 'running the timed steps',
    'final_save': 'saving the final checkpoint',
}


@dataclasses.dataclass
class _Open:
  key: object      # a WORDS key, or None: announced but not recorded
  words: str
  started: float
  announce: bool
  announced_at: float = None


class Phases:

  def __init__(self, activity, say):
    """``activity``: the run's activity.Activity (a phase is its current
    activity); ``say(line)`` prints."""
    self._activity = activity
    self._say = say
    self._lock = threading.Lock()
    self._open = []
    self._seconds = {}

  @contextlib.contextmanager
  def phase(self, key, words=None, announce=True):
    """The main thread is in phase ``key`` (or, key None, an unrecorded
    one described by ``words``); ``announce``: False for phases that show
    their own progress (the timed loop prints step rows)."""
    opened = _Open(key, words or WORDS[key], time.monotonic(), announce)
    with self._lock:
      self._open.append(opened)
    try:
      with self._activity.doing(opened.words):
        yield
    finally:
      took = time.monotonic() - opened.started
      with self._lock:
        self._open.remove(opened)
        if key is not None:
          self._seconds[key] = self._seconds.get(key, 0.0) + took
        announced = opened.announced_at is not None
      if announced:
        self._say('%s took %.1f s' % (_capitalised(opened.words), took))

  def seconds(self):
    """{key: seconds} of every phase so far (one still open: so far)."""
    now = time.monotonic()
    with self._lock:
      seconds = dict(self._seconds)
      for opened in self._open:
        if opened.key is not None:
          seconds[opened.key] = (seconds.get(opened.key, 0.0) + now -
                                 opened.started)
    return {key: round(value, 3) for key, value in seconds.items()}

  def announce(self, now):
    """Watchdog thread: says so when the innermost phase has been slow."""
    with self._lock:
      if not self._open or not self._open[-1].announce:
        return
      opened = self._open[-1]
      took = now - opened.started
      due = (took >= ANNOUNCE_AFTER_SECONDS if opened.announced_at is None
             else now - opened.announced_at >= REPEAT_SECONDS)
      if due:
        opened.announced_at = now
    if due:
      self._say('... still %s (%.0f s so far)' % (opened.words, took))


def _capitalised(text):
  return text[:1].upper() + text[1:]
