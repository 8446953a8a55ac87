"""SIGINT/SIGTERM, seen by the watchdog thread while the main thread is
blocked inside TensorFlow.

Python runs signal handlers only between bytecodes, so a handler never
runs while the main thread waits in a TensorFlow call. The C-level handler
still writes the signal number to the wakeup fd (signal.set_wakeup_fd),
and the watchdog thread waits on that pipe between its checks.
"""

import os
import select
import signal
import threading
import time


class SignalRelay:

  def __init__(self):
    self._lock = threading.Lock()
    self._pipe = None
    self._previous = None
    self.name = None   # 'SIGINT' / 'SIGTERM' once one arrived
    self.at = None     # when (time.monotonic())

  def start(self):
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    try:
      self._previous = signal.set_wakeup_fd(write_end,
                                            warn_on_full_buffer=False)
      self._pipe = (read_end, write_end)
    except ValueError:  # Not the main thread: signals are not ours.
      os.close(read_end)
      os.close(write_end)

  def stop(self):
    with self._lock:
      if self._pipe is None:
        return
      try:
        signal.set_wakeup_fd(self._previous)
      except ValueError:
        pass
      for fd in self._pipe:
        os.close(fd)
      self._pipe = None

  def wait(self, seconds, stop_event):
    """Waits ``seconds``, waking early for a signal or ``stop_event``."""
    if self._pipe is None:
      stop_event.wait(seconds)
      return
    ready, _, _ = select.select([self._pipe[0]], [], [], seconds)
    if ready:
      self.received()

  def received(self):
    """SIGINT/SIGTERM's name if one arrived (either thread may ask)."""
    with self._lock:
      if self._pipe is not None:
        try:
          numbers = os.read(self._pipe[0], 64)
        except BlockingIOError:
          numbers = b''
        for number in numbers:
          if number in (signal.SIGINT, signal.SIGTERM) and not self.name:
            self.name = signal.Signals(number).name
            self.at = time.monotonic()
      return self.name
