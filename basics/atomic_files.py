"""Atomic file writes: a reader never sees a half-written file.

The data goes to a hidden temporary file in the destination's folder (same
file system, so the final os.replace is atomic), which is then renamed over
the destination.

The file ends up with the permissions an ordinary open() would give it
(0666 less the user's umask), not mkstemp's private 0600: records, traces
and dashboards are meant to be read by others, e.g. a web server serving a
dashboard folder as it is.
"""

import os
import tempfile


def current_umask():
  """The process's umask, read without changing it where Linux allows.

  os.umask can only be read by setting it, which for an instant changes it
  for every thread; /proc/self/status (Linux 4.7+) says it directly.
  """
  try:
    with open('/proc/self/status', 'r', encoding='ascii') as status:
      for line in status:
        if line.startswith('Umask:'):
          return int(line.split()[1], 8)
  except (OSError, ValueError, IndexError):
    pass
  mask = os.umask(0o022)
  os.umask(mask)
  return mask


def _temporary_file(path):
  """(fd, temp path) of a new hidden file beside path, mode 0666 & ~umask."""
  folder = os.path.dirname(path)
  os.makedirs(folder, exist_ok=True)
  # Leading dot and .tmp suffix: record loaders (*.json) and browsers skip it.
  fd, temp_path = tempfile.mkstemp(
      dir=folder, prefix='.' + os.path.basename(path) + '.', suffix='.tmp')
  try:
    os.fchmod(fd, 0o666 & ~current_umask())
  except BaseException:
    os.close(fd)
    os.unlink(temp_path)
    raise
  return fd, temp_path


def write_bytes_atomically(path, data):
  """Writes bytes to path atomically; creates the parent folder if needed."""
  path = os.path.abspath(path)
  fd, temp_path = _temporary_file(path)
  try:
    with os.fdopen(fd, 'wb') as temp_file:
      temp_file.write(data)
      temp_file.flush()
      os.fsync(temp_file.fileno())
    os.replace(temp_path, path)
  except BaseException:
    if os.path.exists(temp_path):
      os.unlink(temp_path)
    raise


def write_text_atomically(path, text):
  write_bytes_atomically(path, text.encode('utf-8'))


def write_with_writer_atomically(path, write_to_temp_path):
  """Atomic write for libraries that insist on writing a path themselves.

  write_to_temp_path(temp_path) must write the whole file to temp_path.
  """
  path = os.path.abspath(path)
  fd, temp_path = _temporary_file(path)
  os.close(fd)
  try:
    write_to_temp_path(temp_path)
    os.replace(temp_path, path)
  except BaseException:
    if os.path.exists(temp_path):
      os.unlink(temp_path)
    raise
