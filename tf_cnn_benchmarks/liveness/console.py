"""Lines to the user's terminal, which may go away mid-run.

Closing the terminal sends SIGHUP (a stop request like SIGTERM:
stop_request.py) and from then on every write to it fails (EIO, or EPIPE
for a closed pipe). A run being stopped must still write its record and
leave with its own exit code, so a failed write is no error here: the
process's standard streams are pointed at /dev/null once, and the run goes
on without a console (Python would otherwise also turn the exit code into
120 when it cannot flush stdout at exit).
"""

import os
import sys
import threading

_lock = threading.Lock()


def write(text, out=None):
  """Writes ``text`` to ``out`` (sys.stdout by default) and flushes; a
  terminal or pipe that is gone silences the process's console instead
  of raising."""
  stream = out or sys.stdout
  try:
    stream.write(text)
    stream.flush()
  except (OSError, ValueError):  # EIO / EPIPE, or a closed stream
    if stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
      _silence()
    else:
      raise


def say(line, out=None):
  write(line + '\n', out)


def _silence():
  """Points stdout/stderr (file descriptors too, for TensorFlow's C++
  logging) at /dev/null."""
  with _lock:
    null = open(os.devnull, 'w')  # pylint: disable=consider-using-with
    for fd in (1, 2):
      try:
        os.dup2(null.fileno(), fd)
      except OSError:
        pass
    sys.stdout = sys.stderr = null


def flush():
  """Flushes stdout and stderr (before os._exit, which would not)."""
  for stream in (sys.stdout, sys.stderr):
    write('', stream)
