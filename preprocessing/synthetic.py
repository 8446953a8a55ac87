"""Synthetic input: one random batch per tower, made once, reused every step.

Images are drawn on the tower's device from a truncated normal (mean 0,
sd 0.5, so within [-1, 1]: the range the real-data pipelines feed the
models) and random labels, both held in non-trainable local variables. The
original drew pixel-valued images (mean 127, sd 60) although its models were
trained on [-1, 1] inputs; that made the trivial model's loss diverge to NaN
on synthetic data, and NaN arithmetic can change speed. Values do not change
the work of a convolution, so the benchmark is unaffected. Every step then
reads the same tensors, so the benchmark measures the model alone, with no
input or host-to-device cost. Local variables stay out of checkpoints.
"""

import tensorflow as tf

from preprocessing import base

tf1 = tf.compat.v1

# Examples per epoch of the datasets synthetic data stands in for.
EXAMPLES_PER_EPOCH = {
    ('imagenet', 'train'): 1281167, ('imagenet', 'validation'): 50000,
    ('cifar10', 'train'): 50000, ('cifar10', 'validation'): 10000,
}
# Pixel distribution of synthetic images (see the module docstring).
IMAGE_MEAN, IMAGE_STDDEV = 0.0, 0.5


class SyntheticInput(base.InputSource):
  """Per-tower constant batches of shape [batch, h, w, 3] / [batch]."""

  synthetic = True

  def __init__(self, image_size, num_classes, batch_size_per_tower,
               data_name='imagenet', subset='train', first_tower=0):
    if isinstance(image_size, (tuple, list)):
      self._size = (int(image_size[0]), int(image_size[1]))
    else:
      self._size = (int(image_size), int(image_size))
    self._num_classes = int(num_classes)
    self._batch_size = int(batch_size_per_tower)
    self.description = '%s (synthetic)' % data_name
    self.num_examples_per_epoch = EXAMPLES_PER_EPOCH.get(
        (data_name, subset), EXAMPLES_PER_EPOCH[('imagenet', subset)])
    self._variables = []
    # Global index of this process's first tower (a cluster worker's towers
    # come after those of the workers before it): a tower's batch depends
    # only on the seed and its global index, not on the graph around it.
    self._first_tower = first_tower

  def tower_batches(self, tower_devices):
    pairs = []
    shape = [self._batch_size, self._size[0], self._size[1], 3]
    for i, device in enumerate(tower_devices):
      with tf1.device(device), tf1.name_scope('synthetic_input_%d' % i):
        images = tf1.Variable(
            tf.random.truncated_normal(shape, mean=IMAGE_MEAN,
                                       stddev=IMAGE_STDDEV,
                                       seed=2 * (self._first_tower + i)),
            trainable=False, name='images',
            collections=[tf1.GraphKeys.LOCAL_VARIABLES])
        labels = tf1.Variable(
            tf.random.uniform([self._batch_size], minval=0,
                              maxval=self._num_classes, dtype=tf.int32,
                              seed=2 * (self._first_tower + i) + 1),
            trainable=False, name='labels',
            collections=[tf1.GraphKeys.LOCAL_VARIABLES])
        self._variables += [images, labels]
        pairs.append((tf.identity(images), tf.identity(labels)))
    return pairs

  def initializers(self):
    # The driver initialises local variables too; running these again only
    # redraws the batch, so listing them here is safe either way.
    return [v.initializer for v in self._variables]
