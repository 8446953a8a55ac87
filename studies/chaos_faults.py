"""The chaos soak's faults that need more than a signal: a full disk (under
--train_dir or --result_dir), ImageNet-format shards with one corrupt
record, a forged exit note on the progress board, and the processes a
trial left behind.

(Network faults use tests/cluster/netns.py, the veth pair the partition
tests use; signals are plain os.kill.)
"""

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time


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


# ImageNet's own sizes: its 1024 train shards hold ~1250 JPEGs of ~110 KB
# (~400x350) each. Two such shards (~125 MB each) make a re-scan take the
# seconds a real one does, longer than a peer looks for a root cause
# (root_cause.PEER_FAILURE_WAIT_SECONDS): the case of issue 29's finding 3.
SHARD_IMAGES, IMAGE_HEIGHT, IMAGE_WIDTH, TRAIN_SHARDS = 1200, 375, 500, 2


def imagenet_shards(root):
  """A real-sized ImageNet-format train set under ``root`` (built once,
  ~40 s)."""
  shards = os.path.join(root, 'shards')
  if os.path.isdir(shards):
    return shards
  from preprocessing import build_dataset  # pylint: disable=g-import-not-at-top
  from preprocessing import generated_data  # pylint: disable=g-import-not-at-top
  images = os.path.join(root, 'images')
  classes = 4
  generated_data.make_image_folder(
      images, num_classes=classes,
      images_per_class=SHARD_IMAGES * TRAIN_SHARDS // classes,
      height=IMAGE_HEIGHT, width=IMAGE_WIDTH)
  building = shards + '.partial'
  shutil.rmtree(building, ignore_errors=True)
  build_dataset.build(images, building, num_train_shards=TRAIN_SHARDS,
                      num_validation_shards=1, validation_fraction=0.01,
                      log=lambda *a: None)
  shutil.rmtree(images)
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


def records_by_task(result_dir, problems):
  """{'worker0': record, ...} of the run records a trial left in
  ``result_dir``; a stray or half-written file, or a record that does not
  parse, goes to ``problems['records']``."""
  from results import record_io  # pylint: disable=g-import-not-at-top
  by_task = {}
  names = sorted(os.listdir(result_dir)) if os.path.isdir(result_dir) else []
  for name in names:
    if not name.endswith('.json'):
      problems['records'].append('half-written or stray file: %s' % name)
      continue
    try:
      record = record_io.read_record(os.path.join(result_dir, name))
    except record_io.UnreadableRecord as e:
      problems['records'].append('%s: %s' % (name, e))
      continue
    config = record['config']
    by_task['%s%d' % (config['job_name'], config['task_index'])] = record
  return by_task


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


# Exit notes as a stranger (or a broken peer) might write them: not JSON,
# JSON but no note, a status nobody knows, a failure of the wrong shape.
FORGED_NOTES = ('not json at all', '[1]', '{"status": "exploded"}',
                '{"status": "failed", "failure": {"message": ["x"]}}')
FORGE_SECONDS = 60


def board_device(trial):
  """Where the trial's progress board lives (runtime.wire_graph: ps 0, or
  worker 0 without ps)."""
  return '/job:%s/task:0/device:CPU:0' % ('ps' if trial.num_ps else 'worker')


def forge_note(trial, addresses):
  """Writes a malformed exit note as the victim's, through the board's own
  post op, from a process outside the cluster that can reach the board's
  host (as anyone on its network can: TensorFlow's server has no
  authentication). Returns the time.monotonic() just before the post (a
  system-wide clock, the same in every process here): the fault is the
  post, not the forger's start, which first imports TensorFlow and opens a
  session, several seconds on a loaded host. Raises if the write did not
  happen."""
  host = 'ps0' if trial.num_ps else 'worker0'
  text = random.Random(trial.seed).choice(FORGED_NOTES)
  result = subprocess.run(
      [sys.executable, os.path.abspath(__file__), 'forge',
       '--target', 'grpc://' + addresses[host],
       '--device', board_device(trial),
       '--clients', str(trial.num_workers),
       '--index', trial.victim[len('worker'):], '--text', text],
      capture_output=True, text=True, timeout=FORGE_SECONDS)
  if result.returncode != 0:
    raise RuntimeError('could not forge the note: %s' %
                       result.stderr.strip()[-800:])
  return float(re.search(r'^posting at (\S+)$', result.stdout,
                         re.M).group(1))


def _forge(args):
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  sys.path.insert(0, os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster.task import progress_board  # pylint: disable=g-import-not-at-top
  tf1 = tf.compat.v1
  tf1.disable_eager_execution()
  # The board's variables are shared by name on their host: a graph that
  # declares them (never initialises them) writes the cluster's own.
  board = progress_board.ProgressBoard(args.device, args.clients, -1)
  job = args.device.split('/')[1]
  config = tf1.ConfigProto(device_filters=['/%s/task:0' % job])
  with tf1.Session(args.target, config=config) as sess:
    print('posting at %.6f' % time.monotonic(), flush=True)
    sess.run(board._post_note, {  # pylint: disable=protected-access
        board._note_index: args.index, board._note_text: args.text},  # pylint: disable=protected-access
             options=tf1.RunOptions(timeout_in_ms=FORGE_SECONDS * 1000 // 2))


if __name__ == '__main__':
  _parser = argparse.ArgumentParser(
      description='chaos_faults.py forge: post an exit note on a board')
  _parser.add_argument('what', choices=['forge'])
  _parser.add_argument('--target', required=True)
  _parser.add_argument('--device', required=True)
  _parser.add_argument('--clients', type=int, required=True)
  _parser.add_argument('--index', type=int, required=True)
  _parser.add_argument('--text', required=True)
  _forge(_parser.parse_args())
