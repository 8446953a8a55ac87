"""Atomic file writes: a reader never sees a half-written file.

The data goes to a hidden temporary file in the destination's folder (same
file system, so the final os.replace is atomic), which is then renamed over
the destination.
"""

import os
import tempfile


def write_bytes_atomically(path, data):
  """Writes bytes to path atomically; creates the parent folder if needed."""
  path = os.path.abspath(path)
  folder = os.path.dirname(path)
  os.makedirs(folder, exist_ok=True)
  # Leading dot and .tmp suffix: record loaders (*.json) and browsers skip it.
  fd, temp_path = tempfile.mkstemp(
      dir=folder, prefix='.' + os.path.basename(path) + '.', suffix='.tmp')
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
  folder = os.path.dirname(path)
  os.makedirs(folder, exist_ok=True)
  fd, temp_path = tempfile.mkstemp(
      dir=folder, prefix='.' + os.path.basename(path) + '.', suffix='.tmp')
  os.close(fd)
  try:
    write_to_temp_path(temp_path)
    os.replace(temp_path, path)
  except BaseException:
    if os.path.exists(temp_path):
      os.unlink(temp_path)
    raise
