"""SIGINT/SIGTERM from the process's first line, before a run's watchdog.

A benchmark process spends its first seconds (a minute on a loaded
machine) importing TensorFlow and reading its flags. A signal then must
not kill it by the default action, with no word and no record. ``install``
(first thing in the entry points, before TensorFlow is imported) sets up
the run's stop request (stop_request.py) at once, and a guard thread that
acknowledges a signal at once. The run's watchdog takes the stop request
over when the run starts (``take_over``): a signal that came earlier is
then already counted, and the run stops at its first phase, recorded as
usual. If the watchdog has not taken over within its grace
(stop_request.SIGNAL_GRACE_SECONDS: an import of TensorFlow cannot be cut
short, nor is it worth waiting for), the guard ends the process with 130:

  * before the command line is read: a line, no record (no --result_dir
    is known yet);
  * after: the record the entry point registered (``record_early_stop``),
    built without TensorFlow, with the start-up time as its one phase.

A task that never starts a run (a ps: cluster/task/serving_task.py) keeps the
guard for its whole life, and polls ``received`` to leave at once.

TEST ONLY: with TF_CNN_BENCHMARKS_TEST_STARTUP_TRACE=<file>, each start-up
moment's words (``doing``) are appended to <file> as it begins, so a test
signals a process at a known moment instead of after a guessed sleep.
"""

import os
import threading
import time

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.liveness import console
from tf_cnn_benchmarks.liveness import stop_request

# The record's phase for the time from the process start to the stop.
START_UP_PHASE = 'start_up'

TRACE_ENV = 'TF_CNN_BENCHMARKS_TEST_STARTUP_TRACE'

_guard = None


class _Guard:

  def __init__(self, say):
    self._say = say
    self.started = time.monotonic()
    self.doing = 'starting'
    self.write_record = None   # write_record(failure, phases, say) -> path
    self.lock = threading.Lock()
    self.taken_over = False
    self._stop = threading.Event()
    self.request = stop_request.StopRequest(self._acknowledge)
    self.request.__enter__()
    threading.Thread(target=self._loop, name='early-signals',
                     daemon=True).start()

  def _acknowledge(self, name, count):
    if count == 1:
      self._say('Stopping: got %s while %s; send it again to stop now.' % (
          name, self.doing))
    elif count == 2:
      self._say('Stopping now: got %s again.' % name)

  def _loop(self):
    grace = stop_request.SIGNAL_GRACE_SECONDS
    while not self._stop.is_set():
      at = self.request.at
      wait = 1.0 if at is None else max(0.05, at + grace - time.monotonic())
      self.request.wait(wait, self._stop)
      if self._stop.is_set() or self.request.at is None:
        continue
      if (self.request.count >= 2 or
          time.monotonic() - self.request.at >= grace):
        self._end()

  def _end(self):
    """Ends the process as interrupted, unless a watchdog took over."""
    with self.lock:  # held to the end: take_over waits for os._exit
      if self.taken_over:
        return
      failure = failures.failure('Interrupted', 'stopped by %s while %s '
                                 '(before the run started)' % (
                                     self.request.name, self.doing))
      for line in failures.report_lines(failure, 'interrupted'):
        self._say(line)
      if self.write_record is None:
        self._say('No run record: the command line was not read yet.')
      else:
        try:
          # A record that cannot be written is said by write_record, once
          # (record.write_or_say); this catches the rest (a bug building
          # it): either way the process ends here with its code.
          path = self.write_record(failure, {
              START_UP_PHASE: time.monotonic() - self.started}, self._say)
          if path:
            self._say('Run record: %s' % path)
        except Exception as e:  # pylint: disable=broad-except
          self._say('Could not write the run record: %s' % e)
      console.flush()
      os._exit(exit_codes.INTERRUPTED)  # pylint: disable=protected-access

  def take_over(self, on_signal):
    with self.lock:
      self.taken_over = True
      self._stop.set()
    self.request.on_signal = on_signal
    return self.request


def _print(line):
  console.say(line)


def install(say=_print):
  """Takes SIGINT/SIGTERM over now (main thread; once per process)."""
  global _guard
  if _guard is None:
    _guard = _Guard(say)
    _trace('starting')


def doing(words):
  """What the process is doing before its run starts (for the messages)."""
  if _guard is not None:
    _guard.doing = words
    _trace(words)


def _trace(words):
  path = os.environ.get(TRACE_ENV)
  if path:
    with open(path, 'a') as f:
      f.write(words + '\n')


def record_early_stop(write_record):
  """``write_record(failure, phases, say)`` -> the record's path or None
  (``say`` a line that it could not be written): how the guard records a
  run stopped before it started (once the flags are read; it must not
  need TensorFlow, which may be half-imported)."""
  if _guard is not None:
    _guard.write_record = write_record


def received():
  """The first signal's name if one arrived, before any watchdog."""
  return _guard.request.received() if _guard is not None else None


def take_over(on_signal):
  """The installed stop request, now the caller's (a run's watchdog), with
  any signal already counted; None if ``install`` was not called (a run
  started from a library call)."""
  global _guard
  guard, _guard = _guard, None
  return guard.take_over(on_signal) if guard is not None else None
