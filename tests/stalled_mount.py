"""A folder on a file system the test can stall, like a hung network mount.

``python -m tests.stalled_mount SOURCE MOUNTPOINT`` serves SOURCE read-only
at MOUNTPOINT through FUSE (fusepy over the system's libfuse2), in its own
process; StalledMount starts it, stalls it and takes it down again.

What a stalled NFS hard mount does to a reader, and so what this does:
the reader's read() sits in the kernel waiting for a server that does not
answer, using no CPU, and it can still be killed (NFS waits are
TASK_KILLABLE). Here the server is the daemon, and stalling it (SIGUSR1)
makes it stop taking requests from /dev/fuse once it has answered the one
in hand: every later request stays queued in the kernel, which abandons a
queued request when its caller is killed. (SIGSTOP would not do: a daemon
stopped with a request in hand leaves its caller waiting uninterruptibly,
a reader that can never be killed, which no real stalled mount does to a
read-only file.) So the daemon runs libfuse's request loop itself, in
Python, one request at a time, and looks at the stall flag between them.

Reads go to the daemon every time (direct_io: no page cache to hide the
stall). FLUSH is not implemented, so the kernel stops sending it after the
first close; a close after the stall then does not wait for the daemon,
as closing a read-only file on NFS does not.
"""

import ctypes
import errno
import os
import select
import signal
import subprocess
import sys
import time

# How long a mount (or an unmount) may take on a loaded machine.
_SETTLE_SECONDS = 30
STALLED, RESUMED = 'stalled', 'resumed'


class PassThrough:
  """fusepy operations: SOURCE read-only. No ``flush`` or ``lock``: see
  the module doc."""

  use_ns = True  # fusepy's wish; this file system sets no times

  def __init__(self, source):
    self._source = source

  def _path(self, path):
    return os.path.join(self._source, path.lstrip('/'))

  def __call__(self, op, *args):
    import fuse  # pylint: disable=g-import-not-at-top
    try:
      return getattr(self, op)(*args)
    except OSError as e:
      raise fuse.FuseOSError(e.errno or errno.EIO) from e
    except AttributeError as e:
      raise fuse.FuseOSError(errno.ENOSYS) from e

  def getattr(self, path, fh=None):
    del fh
    st = os.lstat(self._path(path))
    return {key: getattr(st, key) for key in (
        'st_mode', 'st_nlink', 'st_size', 'st_uid', 'st_gid', 'st_atime',
        'st_mtime', 'st_ctime')}

  def readdir(self, path, fh):
    del fh
    return ['.', '..'] + os.listdir(self._path(path))

  def open(self, path, flags):
    if flags & (os.O_WRONLY | os.O_RDWR):
      raise OSError(errno.EROFS, 'read-only')
    return os.open(self._path(path), os.O_RDONLY)

  def read(self, path, size, offset, fh):
    del path
    return os.pread(fh, size, offset)

  def release(self, path, fh):
    del path
    os.close(fh)
    return 0

  def statfs(self, path):
    st = os.statvfs(self._path(path))
    return {key: getattr(st, key) for key in (
        'f_bavail', 'f_bfree', 'f_blocks', 'f_bsize', 'f_favail', 'f_ffree',
        'f_files', 'f_flag', 'f_frsize', 'f_namemax')}


class _StallableLoop:
  """Stands in for fusepy's libfuse2 handle: its fuse_main_real mounts as
  libfuse's does, then runs the request loop here (module doc); anything
  else goes to libfuse2."""

  def __init__(self, lib):
    self._lib = lib
    self._stalled = False
    for name, restype in (('fuse_setup', ctypes.c_void_p),
                          ('fuse_get_session', ctypes.c_void_p),
                          ('fuse_session_next_chan', ctypes.c_void_p),
                          ('fuse_chan_bufsize', ctypes.c_size_t)):
      getattr(lib, name).restype = restype

  def __getattr__(self, name):
    return getattr(self._lib, name)

  def _set_stalled(self, stalled):
    self._stalled = stalled

  def fuse_main_real(self, argc, argv, ops, ops_size, user_data):
    lib = self._lib
    mountpoint, threads = ctypes.c_char_p(), ctypes.c_int()
    # Mounts; SIGTERM/SIGINT/SIGHUP now end the session (libfuse's own).
    fs = lib.fuse_setup(argc, argv, ops, ctypes.c_size_t(ops_size),
                        ctypes.byref(mountpoint), ctypes.byref(threads),
                        user_data)
    if not fs:
      return 1
    signal.signal(signal.SIGUSR1, lambda *_: self._set_stalled(True))
    signal.signal(signal.SIGUSR2, lambda *_: self._set_stalled(False))
    session = ctypes.c_void_p(lib.fuse_get_session(ctypes.c_void_p(fs)))
    channel = ctypes.c_void_p(lib.fuse_session_next_chan(session, None))
    size = lib.fuse_chan_bufsize(channel)
    buf = ctypes.create_string_buffer(size)
    requests = select.poll()
    requests.register(lib.fuse_chan_fd(channel), select.POLLIN)
    said = None
    while not lib.fuse_session_exited(session):
      if self._stalled != (said == STALLED):
        said = STALLED if self._stalled else RESUMED
        print(said, flush=True)  # StalledMount waits for this line.
      if self._stalled or not requests.poll(100):
        time.sleep(0.05 if self._stalled else 0)
        continue
      got = lib.fuse_chan_recv(ctypes.byref(channel), buf,
                               ctypes.c_size_t(size))
      if got in (-errno.EINTR, -errno.EAGAIN):
        continue
      if got <= 0:  # unmounted
        break
      lib.fuse_session_process(session, buf, ctypes.c_size_t(got), channel)
    lib.fuse_teardown(ctypes.c_void_p(fs), mountpoint)
    return 0


def _serve(source, mountpoint):
  import fuse  # pylint: disable=g-import-not-at-top
  fuse._libfuse = _StallableLoop(fuse._libfuse)  # pylint: disable=protected-access
  # nothreads: the loop above is the only one taking requests.
  fuse.FUSE(PassThrough(source), mountpoint, foreground=True, nothreads=True,
            ro=True, direct_io=True, allow_other=True)


def fuse_unavailable():
  """Why this machine can't mount a FUSE file system, or None."""
  if not os.path.exists('/dev/fuse'):
    return '/dev/fuse does not exist (no FUSE in this kernel or container)'
  try:
    import fuse  # pylint: disable=g-import-not-at-top,unused-import
  except (ImportError, OSError, EnvironmentError) as e:
    return ('fusepy or the system libfuse2 is missing (%s): pip install '
            'fusepy; apt-get install libfuse2 fuse' % e)
  return None


class StalledMount:
  """``with StalledMount(source, mountpoint) as mount:`` ... ``mount.stall()``.

  Leaves nothing behind: the daemon is resumed, the folder unmounted and
  the daemon ended, whatever happened inside.
  """

  def __init__(self, source, mountpoint):
    self.source = source
    self.mountpoint = str(mountpoint)
    self._daemon = None
    self.stalled = False

  def __enter__(self):
    os.makedirs(self.mountpoint, exist_ok=True)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    self._daemon = subprocess.Popen(
        [sys.executable, '-m', 'tests.stalled_mount', self.source,
         self.mountpoint], cwd=repo, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
      deadline = time.monotonic() + _SETTLE_SECONDS
      while not os.path.ismount(self.mountpoint):
        if self._daemon.poll() is not None or time.monotonic() > deadline:
          raise MountFailed('FUSE mount of %s failed: %s' % (
              self.mountpoint, self._daemon.communicate(timeout=5)[0]))
        time.sleep(0.05)
      # One open and close: the daemon answers the first FLUSH with
      # ENOSYS, so no later close waits on it (module doc).
      name = sorted(os.listdir(self.mountpoint))[0]
      with open(os.path.join(self.mountpoint, name), 'rb') as f:
        f.read(1)
    except BaseException:
      self.__exit__(None, None, None)
      raise
    return self

  def stall(self):
    """The daemon stops answering; from now on every read of the mount
    waits, killable, as on a hung network file system."""
    self._daemon.send_signal(signal.SIGUSR1)
    self._wait_for(STALLED)
    self.stalled = True

  def resume(self):
    self._daemon.send_signal(signal.SIGUSR2)
    self._wait_for(RESUMED)
    self.stalled = False

  def _wait_for(self, word):
    said = []
    while not said or said[-1] != word:
      line = self._daemon.stdout.readline()
      if not line:
        raise AssertionError('the FUSE daemon ended before saying %r: %s'
                             % (word, ''.join(said)))
      said.append(line.strip())

  def __exit__(self, *exc):
    if self._daemon is None:
      return
    # libfuse's SIGTERM handler ends the loop, which unmounts; the kernel
    # then fails whatever still waits on the mount.
    self._daemon.terminate()
    try:
      self._daemon.wait(timeout=_SETTLE_SECONDS)
    except subprocess.TimeoutExpired:
      self._daemon.kill()
      self._daemon.wait()
    if os.path.ismount(self.mountpoint):
      subprocess.run(['umount', '-l', self.mountpoint], check=False)
    self._daemon.stdout.close()
    self._daemon = None


class MountFailed(Exception):
  pass


if __name__ == '__main__':
  _serve(sys.argv[1], sys.argv[2])
