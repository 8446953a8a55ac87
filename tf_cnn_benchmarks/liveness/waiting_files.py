"""Which files of a folder this process waits on, asked of Linux's /proc.

A run stalled on its input (a hung network file system, a FIFO without a
writer under --data_dir) has a thread sitting in a system call on a file:
opening a shard, reading it. /proc/self/task/TID/syscall names each
blocked thread's call and its arguments; the file is the path argument
(read from this process's own memory) or the file descriptor's link. That
is the file being read, where "files open" (also here) may be every shard
of an interleave, or none when the stall hit while opening one.

Nothing here touches a file under the folder: a stat of a hung file
system would hang the asker too. Off Linux, or on an architecture not in
_CALLS, both answers are empty.
"""

import os
import platform

# System call number -> (the words for it, the path argument's index or
# None, the file descriptor argument's index or None). Calls a reader
# blocks in; the numbers are the architecture's.
_X86_64 = {
    0: ('reading', None, 0), 17: ('reading', None, 0),
    19: ('reading', None, 0), 295: ('reading', None, 0),
    2: ('opening', 0, None), 257: ('opening', 1, None),
    4: ('looking up', 0, None), 6: ('looking up', 0, None),
    262: ('looking up', 1, None), 332: ('looking up', 1, None),
    217: ('listing', None, 0),
}
_AARCH64 = {
    63: ('reading', None, 0), 67: ('reading', None, 0),
    65: ('reading', None, 0), 69: ('reading', None, 0),
    56: ('opening', 1, None), 79: ('looking up', 1, None),
    291: ('looking up', 1, None), 61: ('listing', None, 0),
}
_CALLS = {'x86_64': _X86_64, 'aarch64': _AARCH64}.get(platform.machine(), {})
_PATH_MAX = 4096
_AT_FDCWD = 0xffffff9c  # -100 as the kernel shows a 32-bit int argument


def open_under(root):
  """Paths under folder ``root`` (a real path) this process has open."""
  found = set()
  try:
    fds = os.listdir('/proc/self/fd')
  except OSError:
    return []
  for fd in fds:
    path = _fd_path(fd)
    if path is not None and _under(path, root):
      found.add(path)
  return sorted(found)


def waited_on_under(root):
  """['opening /data/train-00001-of-00008', ...]: what the threads of
  this process blocked in a call on a file under ``root`` (a real path)
  are doing."""
  try:
    tasks = os.listdir('/proc/self/task')
  except OSError:
    return []
  found = set()
  for tid in tasks:
    try:
      with open('/proc/self/task/%s/syscall' % tid) as f:
        fields = f.read().split()
    except OSError:
      continue  # the thread has ended
    # A running thread shows "running"; a blocked one its call's number,
    # then its arguments in hex.
    call = _CALLS.get(int(fields[0])) if fields[0].isdigit() else None
    if call is None:
      continue
    words, path_arg, fd_arg = call
    if path_arg is not None:
      path = _string_at(int(fields[1 + path_arg], 16))
      if path is not None:
        # Relative to the working folder, or to the *at call's folder.
        at = int(fields[1], 16) if path_arg == 1 else _AT_FDCWD
        base = os.getcwd() if at == _AT_FDCWD else _fd_path(str(at)) or ''
        path = os.path.normpath(os.path.join(base, path))
    else:
      path = _fd_path(str(int(fields[1 + fd_arg], 16)))
    if path is not None and _under(path, root):
      found.add('%s %s' % (words, path))
  return sorted(found)


def _under(path, root):
  return path.startswith(os.path.join(root, ''))


def _fd_path(fd):
  try:
    return os.readlink('/proc/self/fd/%s' % fd)
  except OSError:
    return None


def _string_at(address):
  """The C string at ``address`` in this process (None: unreadable)."""
  chunks = []
  try:
    fd = os.open('/proc/self/mem', os.O_RDONLY)
  except OSError:
    return None
  try:
    while sum(map(len, chunks)) < _PATH_MAX:
      # A page at a time: the string may end just before unmapped memory.
      chunk = os.pread(fd, 4096 - address % 4096, address)
      end = chunk.find(b'\0')
      if end >= 0:
        chunks.append(chunk[:end])
        return b''.join(chunks).decode('utf-8', 'replace')
      chunks.append(chunk)
      address += len(chunk)
  except (OSError, OverflowError):
    return None
  finally:
    os.close(fd)
  return None
