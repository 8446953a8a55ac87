"""The console report, in the original tool's format (scripts parse it).

Header labels are padded to 13 columns; step rows are tab separated:
``<step>\timages/sec: X +/- Y (jitter = Z)\t<loss>`` with top-1/top-5
columns appended when training accuracy is printed.
"""

import sys

import tensorflow as tf

from tf_cnn_benchmarks.liveness import console
from tf_cnn_benchmarks.process import malloc_tuning
from tf_cnn_benchmarks.measure import environment
from tf_cnn_benchmarks.run import evaluation
from tf_cnn_benchmarks.variable_update.sync_kind import SyncKind

DASHES = '-' * 64


class Reporter:
  """Writes report lines to a stream (stdout by default), flushed each line."""

  def __init__(self, out=None):
    self.out = out or sys.stdout

  def say(self, text=''):
    # A terminal closed mid-run silences the report, not the run.
    console.say(text, self.out)

  def field(self, label, value):
    self.say('%-13s%s' % (label + ':', value))

  def header(self, rc, variables_desc, dataset_desc, sync=None,
             all_reduce=None):
    p = rc.params
    self.field('TensorFlow', tf.__version__)
    self.field('TF build', environment.tf_build_line())
    self.field('Malloc', malloc_tuning.describe())
    self.field('Model', rc.model.name)
    self.field('Dataset', dataset_desc)
    self.field('Mode', rc.mode.value)
    self.field('SingleSess', False)
    self.field('Batch size', '%d global' % rc.global_batch_size)
    self.say('%-13s%d per device' % ('', rc.batch_size_per_device))
    self.field('Num batches', rc.num_batches)
    self.field('Num epochs', '%.2f' % (rc.num_batches * rc.global_batch_size /
                                        float(rc.examples_per_epoch)))
    self.field('Devices', str(rc.tower_devices))
    self.field('NUMA bind', p.use_numa_affinity)
    self.field('Data format', rc.data_format)
    if rc.compute_dtype != tf.float32:
      self.field('Precision', '%s compute, %s variables' % (
          rc.compute_dtype.name, rc.variable_dtype.name))
    if rc.loss_scaling is not None:
      self.field('Loss scale', rc.loss_scaling.describe())
    if rc.training:
      self.field('Optimizer', p.optimizer)
    target = evaluation.target_line(p, rc.examples_per_epoch / float(
        rc.global_batch_size))
    if target:
      self.field('Target', target)
    self.field('Variables', variables_desc)
    if all_reduce:
      self.field('AllReduce', all_reduce)
    if sync is not None:
      self.field('Sync', sync)
    self.say('=' * 10)

  def table_head(self, with_accuracy):
    cols = ['Step', 'Img/sec', self.loss_name]
    if with_accuracy:
      cols += ['top_1_accuracy', 'top_5_accuracy']
    self.say('\t'.join(cols))

  loss_name = 'total_loss'

  def step_row(self, step, times, loss, accuracy=None, images_per_sec=None):
    """``images_per_sec``: the rate shown (default: the mean so far)."""
    if images_per_sec is None:
      images_per_sec = times.mean_speed()
    speed = 'images/sec: %.1f +/- %.1f (jitter = %.1f)' % (
        images_per_sec, times.speed_uncertainty(), times.jitter())
    row = '%i\t%s\t%.3f' % (step, speed, loss)
    if accuracy is not None:
      row += '\t%.2f\t%.2f' % accuracy
    self.say(row)

  def total(self, images_per_sec):
    self.say(DASHES)
    self.say('total images/sec: %.2f' % images_per_sec)
    self.say(DASHES)


def sync_description(rc):
  """The header's `Sync:` value: cluster runs only, as in the original."""
  if not rc.cluster:
    return None
  if rc.cluster.sync is SyncKind.BARRIER:
    return 'True (barrier: each worker applies its own gradient)'
  return str(rc.cluster.sync.synchronous)
