"""Checkpoints of a run: restored from --train_dir at start, saved to it.

Saves every --save_model_steps steps or --save_model_secs seconds and at the
end; only progress is saved, and only by the chief of a cluster, which
holds --train_dir's lock (train_dir_lock.py) for the whole run.
"""

import contextlib
import os
import time

import tensorflow as tf

from tf_cnn_benchmarks import train_dir_lock

tf1 = tf.compat.v1


def writes_train_dir(params, runtime):
  """Does this run write checkpoints to --train_dir?

  In a cluster only the chief does (the others would race it for the same
  files); --eval only reads them.
  """
  return bool(params.train_dir) and not params.eval and runtime.is_chief


@contextlib.contextmanager
def train_dir_locked(params, runtime, reporter):
  """Holds --train_dir's lock (train_dir_lock.py) for the run, when this run
  writes there; raises train_dir_lock.TrainDirInUse when another run does."""
  if not writes_train_dir(params, runtime):
    yield
    return
  lock = train_dir_lock.acquire(params.train_dir)
  try:
    if lock.took_over is not None:
      reporter.line(lock.took_over_line())
    yield
  finally:
    lock.release()


def restore_latest(sess, params, built, reporter):
  """Restores the latest checkpoint in --train_dir, if any; returns its
  path (None: nothing to restore)."""
  latest = (tf1.train.latest_checkpoint(params.train_dir)
            if params.train_dir else None)
  if latest:
    built.saver.restore(sess, latest)
    reporter.line('Restored checkpoint %s (global step %d)' % (
        latest, sess.run(built.global_step)))
    return latest
  elif params.eval:
    raise FileNotFoundError(
        'No checkpoint in --train_dir=%s to evaluate. Train with '
        '--train_dir=%s first (checkpoints are written at the end of a '
        'training run).' % (params.train_dir, params.train_dir))
  return None


class Checkpointer:
  """Saves to train_dir every N steps / seconds and at the end."""

  def __init__(self, params, built, runtime):
    self.params = params
    self.built = built
    self.runtime = runtime
    self.last_time = time.monotonic()
    self.path = None
    self.saved_step = None

  def enabled(self):
    return writes_train_dir(self.params, self.runtime)

  def maybe_save(self, sess, step):
    if not self.enabled():
      return
    p = self.params
    due = (p.save_model_steps and step % p.save_model_steps == 0) or (
        p.save_model_secs and
        time.monotonic() - self.last_time >= p.save_model_secs)
    if due:
      self.save(sess)

  def save(self, sess):
    if not self.enabled():
      return
    # Only progress is saved: never the same global step twice (the
    # original's chief saved every 10 s while its cluster was stuck, and a
    # second save of a step rewrites the latest checkpoint's files).
    step = int(sess.run(self.built.global_step))
    self.last_time = time.monotonic()
    if step == self.saved_step:
      return
    os.makedirs(self.params.train_dir, exist_ok=True)
    # In a cluster the watchdog reports a save that takes too long.
    with self.runtime.doing('saving a checkpoint to %s' %
                            self.params.train_dir):
      # Saver writes the data files first and updates the 'checkpoint'
      # index last (atomically), so the latest checkpoint is never
      # half-written.
      self.path = self.built.saver.save(
          sess, os.path.join(self.params.train_dir, 'model.ckpt'),
          global_step=step)
    self.saved_step = step
    self.last_time = time.monotonic()
