"""SIGINT/SIGTERM: a request to stop, seen even while the main thread is
blocked inside TensorFlow.

Python runs signal handlers only between bytecodes, so a handler never
runs while the main thread waits in a TensorFlow call. The C-level handler
still writes the signal number to the wakeup fd (signal.set_wakeup_fd):
the watchdog thread waits on that pipe, and the main thread reads it
between steps and phases. The pipe is the one place signals are counted
(whichever thread reads a byte counts it), so the Python-level handler does
nothing: it is installed only so that the signal no longer kills the
process by default.

A library may take a signal over behind Python's back: TensorFlow's
preemption notifier, started with MultiWorkerMirroredStrategy's
coordination agent, installs its own C-level SIGTERM handler (which only
sets a flag of its own), and from then on SIGTERM would neither reach the
pipe nor end the process. ``reclaim`` puts this request's handlers back
(sigaction, from any thread); the watchdog calls it every tick, and
``kept`` every few milliseconds around a call known to take them. A
SIGTERM the notifier took before that (while a call held the interpreter)
is given back with ``deliver``.
"""

import contextlib
import ctypes
import os
import select
import signal
import threading
import time

from basics import stop_signals

# Ctrl-C, SIGTERM and SIGHUP (a closed terminal): basics/stop_signals.py.
STOP_SIGNALS = stop_signals.STOP_SIGNALS
_SIGNALS = STOP_SIGNALS
# A signal the main thread has not acted on in this long is acted on by
# the thread that watches it (watchdog.py; before the run, early_signals.py).
SIGNAL_GRACE_SECONDS = 2.0


class Interrupted(Exception):
  """The main thread saw a stop request between steps or phases."""
  status = 'interrupted'


def _ignore(signum, frame):
  del signum, frame


# Big enough for the C library's struct sigaction (152 bytes in glibc on
# x86-64 and aarch64), handled as opaque bytes: only its first field, the
# handler's address, is read.
_SIGACTION_BYTES = 512
try:
  _LIBC = ctypes.CDLL(None, use_errno=True)
  _LIBC.sigaction  # pylint: disable=pointless-statement
except (OSError, AttributeError):
  _LIBC = None


def _c_action(sig):
  """The process's current C-level action for ``sig`` (None: unknown)."""
  if _LIBC is None:
    return None
  action = ctypes.create_string_buffer(_SIGACTION_BYTES)
  if _LIBC.sigaction(int(sig), None, action) != 0:
    return None
  return action


def _handler_address(action):
  return ctypes.c_void_p.from_buffer(action).value


class StopRequest:
  """Installed for a run's lifetime (``with``); see the module docstring."""

  def __init__(self, on_signal=None):
    """``on_signal(name, count)``: called by the thread that first reads
    each signal (to acknowledge it at once); whoever takes the request
    over may replace it (early_signals.take_over)."""
    self.on_signal = on_signal or (lambda name, count: None)
    # Reentrant: the main thread may be reading the pipe when its own
    # (no-op) handler runs; nothing here waits on another thread.
    self._lock = threading.RLock()
    self._pipe = None
    self._previous_fd = None
    self._previous = {}
    self._actions = {}
    self.name = None   # 'SIGINT' / 'SIGTERM' once one arrived
    self.at = None     # when (time.monotonic())
    self.count = 0     # how many arrived

  def __enter__(self):
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    try:
      self._previous_fd = signal.set_wakeup_fd(write_end,
                                               warn_on_full_buffer=False)
    except ValueError:  # Not the main thread: signals are not ours.
      os.close(read_end)
      os.close(write_end)
      return self
    self._pipe = (read_end, write_end)
    for sig in _SIGNALS:
      self._previous[sig] = signal.signal(sig, _ignore)
    # Python's C-level handler, as installed just now: what reclaim puts
    # back if a library replaces it.
    self._actions = {sig: _c_action(sig) for sig in _SIGNALS}
    return self

  def reclaim(self):
    """Puts this request's handlers back where a library replaced them
    (any thread); returns the names of the signals it took back."""
    taken_back = []
    with self._lock:
      if self._pipe is None:
        return taken_back
      for sig, ours in self._actions.items():
        now = _c_action(sig)
        if ours is None or now is None:
          continue
        if _handler_address(now) != _handler_address(ours):
          _LIBC.sigaction(int(sig), ours, None)
          taken_back.append(signal.Signals(sig).name)
    return taken_back

  def deliver(self, sig):
    """Counts ``sig`` as if it had arrived now (any thread): a signal a
    library's handler took before ``reclaim`` could put ours back
    (cluster/task/tf2_sigterm_notice.py). It goes through the pipe, as
    a signal does, so it is counted and acknowledged in the one place."""
    self._write(bytes([int(sig)]))

  def wake(self):
    """Ends a ``wait`` now (any thread): a byte that is no signal's
    number, which ``received`` reads and drops. The watchdog is told to
    stop this way; otherwise a run's end would wait out its tick."""
    self._write(b'\0')

  def _write(self, data):
    """``data`` into the pipe, as the C-level handler writes a signal."""
    with self._lock:
      if self._pipe is not None:
        try:
          os.write(self._pipe[1], data)
        except (BlockingIOError, OSError):
          pass  # a full pipe holds unread bytes: a wait wakes anyway

  @contextlib.contextmanager
  def kept(self, every=0.01):
    """Reclaims the handlers every ``every`` s while the block runs: around
    a call that installs a handler of its own and then blocks (a signal in
    between would be lost, not just late)."""
    done = threading.Event()

    def keep():
      while not done.wait(every):
        self.reclaim()
    keeper = threading.Thread(target=keep, name='signal-keeper', daemon=True)
    keeper.start()
    try:
      yield
    finally:
      done.set()
      keeper.join()
      self.reclaim()

  def __exit__(self, *exc):
    with self._lock:
      if self._pipe is None:
        return
      for sig, handler in self._previous.items():
        signal.signal(sig, handler)
      try:
        signal.set_wakeup_fd(self._previous_fd)
      except ValueError:
        pass
      for fd in self._pipe:
        os.close(fd)
      self._pipe = None

  def wait(self, seconds, stop_event):
    """Waits ``seconds``, waking early for a signal or ``wake``
    (``stop_event`` is waited on only where there is no pipe)."""
    if self._pipe is None:
      stop_event.wait(seconds)
      return
    try:
      ready, _, _ = select.select([self._pipe[0]], [], [], seconds)
    except (OSError, ValueError):  # closed under us: the run is ending
      stop_event.wait(seconds)
      return
    if ready:
      self.received()

  def received(self):
    """The first signal's name if one arrived (either thread may ask)."""
    arrived = []
    with self._lock:
      if self._pipe is not None:
        try:
          numbers = os.read(self._pipe[0], 64)
        except (BlockingIOError, OSError):
          numbers = b''
        for number in numbers:
          if number in _SIGNALS:
            self.count += 1
            if self.name is None:
              self.name = signal.Signals(number).name
              self.at = time.monotonic()
            arrived.append((signal.Signals(number).name, self.count))
    for name, count in arrived:
      self.on_signal(name, count)
    return self.name

  def check(self):
    """Raises Interrupted if a stop was requested."""
    name = self.received()
    if name:
      raise Interrupted('stopped by %s' % name)
