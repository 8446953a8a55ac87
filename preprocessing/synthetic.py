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


class _HeldBatches(base.InputSource):
  """Per-tower batches drawn once into local variables (module docstring):
  what the image and the ids sources share."""

  synthetic = True

  def __init__(self, num_classes, batch_size_per_tower, data_name, subset,
               first_tower):
    self._num_classes = int(num_classes)
    self._batch_size = int(batch_size_per_tower)
    self.num_examples_per_epoch = EXAMPLES_PER_EPOCH.get(
        (data_name, subset), EXAMPLES_PER_EPOCH[('imagenet', subset)])
    self._variables = []
    # Global index of this process's first tower (a cluster worker's towers
    # come after those of the workers before it): a tower's batch depends
    # only on the seed and its global index, not on the graph around it.
    self._first_tower = first_tower

  def _hold(self, value, name):
    """``value`` drawn once into a local variable; every step reads it."""
    var = tf1.Variable(value, trainable=False, name=name,
                       collections=[tf1.GraphKeys.LOCAL_VARIABLES])
    self._variables.append(var)
    return tf.identity(var)

  def _labels(self, seed):
    return tf.random.uniform([self._batch_size], minval=0,
                             maxval=self._num_classes, dtype=tf.int32,
                             seed=seed)

  def draw(self, index):
    """(inputs, labels) of tower ``index`` of this process: random ops
    seeded by the tower's global index, not yet held."""
    raise NotImplementedError

  def tower_batches(self, tower_devices):
    pairs = []
    for i, device in enumerate(tower_devices):
      with tf1.device(device), tf1.name_scope('synthetic_input_%d' % i):
        inputs, labels = self.draw(i)
        pairs.append((self._hold(inputs, self._INPUT_NAME),
                      self._hold(labels, 'labels')))
    return pairs

  def eager_batches(self, num_towers):
    """[(inputs, labels)] of this process's towers as eager tensors: the
    batches the graph engine trains on (engine_tf2/inputs.py).

    The graph engine draws its held batches twice (the driver runs the
    local-variable initializers, then the input source's initializers), so
    the batch it trains on is the second draw of each seeded op; an eager
    random op with the same seeds gives the same sequence (tf.random.set_seed
    restarts it), so the second draw here is that same batch.
    """
    for _ in range(2):
      pairs = [self.draw(i) for i in range(num_towers)]
    return pairs

  def initializers(self):
    # The driver initialises local variables too; running these again only
    # redraws the batch, so listing them here is safe either way.
    return [v.initializer for v in self._variables]


class SyntheticInput(_HeldBatches):
  """Per-tower constant batches of shape [batch, h, w, 3] / [batch]."""

  _INPUT_NAME = 'images'

  def __init__(self, image_size, num_classes, batch_size_per_tower,
               data_name='imagenet', subset='train', first_tower=0):
    super().__init__(num_classes, batch_size_per_tower, data_name, subset,
                     first_tower)
    if isinstance(image_size, (tuple, list)):
      self._size = (int(image_size[0]), int(image_size[1]))
    else:
      self._size = (int(image_size), int(image_size))
    self.description = '%s (synthetic)' % data_name

  def draw(self, index):
    shape = [self._batch_size, self._size[0], self._size[1], 3]
    seed = 2 * (self._first_tower + index)
    return (tf.random.truncated_normal(shape, mean=IMAGE_MEAN,
                                       stddev=IMAGE_STDDEV, seed=seed),
            self._labels(seed + 1))


class SyntheticIds(_HeldBatches):
  """Per-tower constant batches of integer ids [batch, columns] and labels
  [batch], for models that read ids instead of images (ncf: user and item).

  Column i is uniform in [0, vocab_sizes[i]); labels are uniform class ids.
  The epoch is the dataset table's, as the original's ncf kept it (it had
  no ids dataset of its own).
  """

  _INPUT_NAME = 'ids'

  def __init__(self, vocab_sizes, num_classes, batch_size_per_tower,
               data_name='imagenet', subset='train', first_tower=0):
    super().__init__(num_classes, batch_size_per_tower, data_name, subset,
                     first_tower)
    self._vocab_sizes = tuple(int(v) for v in vocab_sizes)
    self.description = 'ids (synthetic)'

  def draw(self, index):
    # One seed per column and one for the labels, distinct across towers.
    seed = (len(self._vocab_sizes) + 1) * (self._first_tower + index)
    ids = tf.stack([tf.random.uniform([self._batch_size], minval=0,
                                      maxval=size, dtype=tf.int32,
                                      seed=seed + c)
                    for c, size in enumerate(self._vocab_sizes)], axis=1)
    return ids, self._labels(seed + len(self._vocab_sizes))
