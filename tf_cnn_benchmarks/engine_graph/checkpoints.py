"""Checkpoints of a run: restored from --train_dir at start, saved to it.

Saves every --save_model_steps steps or --save_model_secs seconds and at the
end; only progress is saved, and only by the chief of a cluster, which
holds --train_dir's lock (run/train_dir_lock.py) for the whole run.
"""

import os
import time

import tensorflow as tf

from tf_cnn_benchmarks.config import run_mode
from tf_cnn_benchmarks.run import train_dir_lock

tf1 = tf.compat.v1




def restore_latest(sess, rc, built, reporter):
  """Restores the latest checkpoint in --train_dir, if any; returns its
  path (None: nothing to restore)."""
  params = rc.params
  latest = (tf1.train.latest_checkpoint(params.train_dir)
            if params.train_dir else None)
  if latest:
    built.saver.restore(sess, latest)
    reporter.say('Restored checkpoint %s (global step %d)' % (
        latest, sess.run(built.global_step)))
    return latest
  elif rc.mode is run_mode.RunMode.EVALUATION:
    raise FileNotFoundError(
        'No checkpoint in --train_dir=%s to evaluate. Train with '
        '--train_dir=%s first (checkpoints are written at the end of a '
        'training run).' % (params.train_dir, params.train_dir))
  return None


class Checkpointer:
  """Saves to train_dir every N steps / seconds and at the end."""

  def __init__(self, rc, built, runtime):
    self.rc = rc
    self.params = rc.params
    self.built = built
    self.runtime = runtime
    self.last_time = time.monotonic()
    self.path = None
    self.saved_step = None

  def enabled(self):
    return train_dir_lock.writes_train_dir(self.rc, self.runtime)

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
