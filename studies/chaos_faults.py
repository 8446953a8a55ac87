"""The chaos soak's faults that need more than a signal: a full disk under
--train_dir, ImageNet-format shards with one corrupt record, and the
processes a trial left behind.

(Network faults use tests/cluster/netns.py, the veth pair the partition
tests use; signals are plain os.kill.)
"""

import os
import shutil
import subprocess


class SmallDisk:
  """A tiny tmpfs mounted at ``path``: --train_dir on a disk that fills."""

  def __init__(self, path, size='4m'):
    self.path = path
    self.size = size
    self.mounted = False

  def __enter__(self):
    os.makedirs(self.path, exist_ok=True)
    result = subprocess.run(
        ['mount', '-t', 'tmpfs', '-o', 'size=' + self.size, 'tmpfs',
         self.path], capture_output=True, text=True)
    if result.returncode != 0:
      raise RuntimeError('cannot mount a tmpfs at %s (needs root): %s' % (
          self.path, result.stderr.strip()))
    self.mounted = True
    return self

  def fill(self):
    """Writes a file until the disk is full (ENOSPC)."""
    chunk = b'\0' * 65536
    try:
      with open(os.path.join(self.path, 'filler'), 'wb') as f:
        while True:
          f.write(chunk)
          f.flush()
    except OSError:
      pass

  def copy_to(self, destination):
    """The checkpoint files, copied off the full disk (to resume from)."""
    shutil.copytree(self.path, destination,
                    ignore=shutil.ignore_patterns('filler'))

  def __exit__(self, *exc):
    if self.mounted:
      subprocess.run(['umount', '-l', self.path], capture_output=True)
      self.mounted = False


def imagenet_shards(root):
  """A tiny ImageNet-format train set under ``root`` (built once)."""
  shards = os.path.join(root, 'shards')
  if os.path.isdir(shards):
    return shards
  from preprocessing import build_dataset  # pylint: disable=g-import-not-at-top
  from preprocessing import generated_data  # pylint: disable=g-import-not-at-top
  images = os.path.join(root, 'images')
  generated_data.make_image_folder(images, num_classes=3, images_per_class=8)
  building = shards + '.partial'
  shutil.rmtree(building, ignore_errors=True)
  build_dataset.build(images, building, num_train_shards=1,
                      num_validation_shards=1, validation_fraction=0.1,
                      log=lambda *a: None)
  os.rename(building, shards)
  return shards


def corrupt_copy(shards, destination, rng):
  """A copy of ``shards`` whose train shard has one byte flipped at a
  random place (so a record's checksum fails at a random step); returns
  the shard's path."""
  shutil.copytree(shards, destination)
  shard = [os.path.join(destination, n) for n in sorted(
      os.listdir(destination)) if n.startswith('train-')][0]
  with open(shard, 'r+b') as f:
    size = os.fstat(f.fileno()).st_size
    where = rng.randrange(size // 10, size)
    f.seek(where)
    byte = f.read(1)
    f.seek(where)
    f.write(bytes([byte[0] ^ 0xFF]))
  return shard


def session_members(session_ids):
  """{pid: command} of live (non-zombie) processes in those sessions.

  Every task is started in its own session, and its children inherit it,
  so whatever is left of a trial is found here, however it was forked.
  """
  found = {}
  for name in os.listdir('/proc'):
    if not name.isdigit():
      continue
    try:
      with open('/proc/%s/stat' % name) as f:
        fields = f.read().rsplit(')', 1)[1].split()
      with open('/proc/%s/cmdline' % name, 'rb') as f:
        command = f.read().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
      continue
    state, session = fields[0], int(fields[3])
    if session in session_ids and state != 'Z':
      found[int(name)] = command.strip()[:120]
  return found
