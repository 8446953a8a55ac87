"""One writer per --train_dir: a lock the writing run holds from start to end.

Two training runs on one --train_dir would restore the same checkpoint and
then overwrite each other's checkpoint files. The run that writes
checkpoints (writes_train_dir: a single process, or a
cluster's chief) therefore takes this lock before anything is restored;
the second such run fails at start naming the holder. Readers (--eval,
following the checkpoints with --eval_interval_secs) take no lock.

Two files in train_dir:

  .tf_cnn_benchmarks.lock          empty; the run holds fcntl.flock on it.
                                   The kernel drops the lock when the
                                   process ends, however (even SIGKILL), so
                                   the lock itself is always the truth.
  .tf_cnn_benchmarks.holder.json   who holds it: {host, pid, started_at,
                                   command}, written atomically once the
                                   lock is taken, deleted on release.

Why two: flock locks an inode, and an atomic write (a temporary file
renamed over the old one) replaces the inode, so the holder's name cannot
live in the locked file without being seen half-written.

A holder file left beside a free lock was left by a run that ended without
releasing it (killed). Written on this host, the free lock proves that run
is gone: this run takes over and says so. Written on another host, it
proves nothing (flock may not reach across hosts on a network file
system), so this run refuses and says how to clear it.
"""

import contextlib
import dataclasses
import datetime
import errno
import fcntl
import json
import os
import socket
import sys
import threading
import time
from typing import Optional

from basics import atomic_files
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import run_mode

LOCK_NAME = '.tf_cnn_benchmarks.lock'
HOLDER_NAME = '.tf_cnn_benchmarks.holder.json'
# A holder between taking the lock and naming itself: how long to wait for
# its name before saying it has none yet.
_NAME_WAIT_SECONDS = 2.0


class TrainDirInUse(Exception):
  """Another run holds --train_dir; the message names it (exit code 2)."""
  status = 'failed'
  exit_code = exit_codes.USAGE


@dataclasses.dataclass(frozen=True)
class Holder:
  host: str
  pid: int
  started_at: str
  command: str = ''

  def describe(self):
    return 'pid %d on host %s, started %s%s' % (
        self.pid, self.host, self.started_at,
        ' (%s)' % self.command if self.command else '')


def _this_holder():
  return Holder(host=socket.gethostname(), pid=os.getpid(),
                started_at=datetime.datetime.now(
                    datetime.timezone.utc).isoformat(timespec='seconds'),
                command=' '.join(sys.argv)[:300])


def read_holder(train_dir) -> Optional[Holder]:
  """The holder named in train_dir, or None (no file, or not one of ours)."""
  try:
    with open(os.path.join(train_dir, HOLDER_NAME), encoding='utf-8') as f:
      data = json.load(f)
    return Holder(str(data['host']), int(data['pid']),
                  str(data['started_at']), str(data.get('command', '')))
  except (OSError, ValueError, KeyError, TypeError):
    return None


class TrainDirLock:
  """The lock, once taken (``acquire``); ``release`` at the end of the run.

  ``took_over``: the holder whose leftover lock this run took over, if any.
  """

  def __init__(self, train_dir, fd, took_over):
    self.train_dir = train_dir
    self._fd = fd
    self.took_over = took_over
    # The main thread's finally and the watchdog's way out may both
    # release it.
    self._release_lock = threading.Lock()

  def release(self):
    with self._release_lock:
      if self._fd is None:
        return
      # The name goes first, while the lock is still held: a holder file
      # without a lock then always means a run that was killed.
      try:
        os.unlink(os.path.join(self.train_dir, HOLDER_NAME))
      except FileNotFoundError:
        pass
      os.close(self._fd)  # releases the flock
      self._fd = None

  def took_over_line(self):
    """The line that says this run took a killed run's lock over."""
    return ('Took over --train_dir=%s from a run that ended without '
            'releasing it (%s; that process is gone: it was killed or '
            'crashed). Its checkpoints are kept.' % (
                self.train_dir, self.took_over.describe()))


def acquire(train_dir) -> TrainDirLock:
  """Takes train_dir's lock or raises TrainDirInUse naming the holder."""
  os.makedirs(train_dir, exist_ok=True)
  # Never inherited by a child process (Python's default), which would
  # otherwise keep the lock after this process dies.
  fd = os.open(os.path.join(train_dir, LOCK_NAME), os.O_RDWR | os.O_CREAT,
               0o644)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except OSError as e:
    os.close(fd)
    if e.errno not in (errno.EAGAIN, errno.EACCES):
      raise
    raise TrainDirInUse(_in_use_message(train_dir, _holder_of_held_lock(
        train_dir))) from None
  try:
    left = read_holder(train_dir)
    me = _this_holder()
    if left is not None and left.host != me.host:
      raise TrainDirInUse(_other_host_message(train_dir, left))
    atomic_files.write_text_atomically(
        os.path.join(train_dir, HOLDER_NAME),
        json.dumps(dataclasses.asdict(me), indent=1) + '\n')
  except BaseException:
    os.close(fd)
    raise
  return TrainDirLock(train_dir, fd, left)


def _holder_of_held_lock(train_dir):
  """The live holder's name; it may be a moment from writing it."""
  deadline = time.monotonic() + _NAME_WAIT_SECONDS
  while True:
    holder = read_holder(train_dir)
    if holder is not None or time.monotonic() >= deadline:
      return holder
    time.sleep(0.1)


def _in_use_message(train_dir, holder):
  who = (holder.describe() if holder is not None else
         'a run that has not written its name to %s yet' %
         os.path.join(train_dir, HOLDER_NAME))
  return ('--train_dir=%s is in use by another training run: %s. Two runs '
          'on one --train_dir would restore the same checkpoint and '
          'overwrite each other\'s checkpoints. Wait for that run to end (or '
          'stop it), or give this run its own --train_dir. Evaluating its '
          'checkpoints (--eval --eval_interval_secs) needs no lock and can '
          'run beside it.' % (train_dir, who))


def _other_host_message(train_dir, holder):
  return ('--train_dir=%s was last locked by a training run on another '
          'host: %s. This host (%s) cannot tell whether that run is still '
          'alive (file locks may not reach across hosts on a network file '
          'system). If it has ended, delete %s and start again; otherwise '
          'give this run its own --train_dir.' % (
              train_dir, holder.describe(), socket.gethostname(),
              os.path.join(train_dir, HOLDER_NAME)))


def writes_train_dir(rc, runtime):
  """Does this run write checkpoints to --train_dir?

  In a cluster only the chief does (the others would race it for the same
  files); --eval only reads them.
  """
  return (bool(rc.params.train_dir) and
          rc.mode is not run_mode.RunMode.EVALUATION and runtime.is_chief)


@contextlib.contextmanager
def train_dir_locked(rc, runtime, reporter, before_exit):
  """Holds --train_dir's lock for the run, when this run writes there;
  raises TrainDirInUse when another run does. ``before_exit(release)``
  registers the release with the run's way out past a stuck main thread
  (liveness/run_exit.py), which skips this block's finally."""
  if not writes_train_dir(rc, runtime):
    yield
    return
  lock = acquire(rc.params.train_dir)
  before_exit(lock.release)
  try:
    if lock.took_over is not None:
      reporter.say(lock.took_over_line())
    yield
  finally:
    lock.release()
