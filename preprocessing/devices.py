"""Where input pipelines run, given the towers they feed."""

import warnings

import tensorflow as tf
# MultiDeviceIterator has no public name in TensorFlow 2; tf.distribute
# uses this one.
from tensorflow.python.data.ops import multi_device_iterator_ops  # pylint: disable=g-direct-tensorflow-import

from preprocessing import dataset_options

tf1 = tf.compat.v1


def host_device(tower_devices):
  """The CPU of the first tower's task: tf.data and iterators run there.

  '/gpu:1' -> '/device:CPU:0'; '/job:worker/task:2/device:GPU:0' ->
  '/job:worker/task:2/device:CPU:0', so a worker's input is read locally.
  """
  spec = tf.DeviceSpec.from_string(tower_devices[0] if tower_devices else '')
  return spec.replace(device_type='CPU', device_index=0).to_string()


def to_towers(get_batch, tower_devices):
  """[(images, labels)] with one batch per tower, moved onto its device.

  get_batch() makes one (images, labels) pair (e.g. iterator.get_next(), on
  the host); the identity under tf.device is the copy to the tower.
  """
  pairs = []
  for i, device in enumerate(tower_devices):
    with tf1.name_scope('tower_%d_input' % i):
      images, labels = get_batch()
      with tf1.device(device):
        pairs.append((tf.identity(images, name='images'),
                      tf.identity(labels, name='labels')))
  return pairs


def tower_batches(dataset, tower_devices, params):
  """([(images, labels)] per tower, the iterator's initializer).

  With --datasets_use_prefetch (as the original), a MultiDeviceIterator
  deals batches to the towers in turn and prefetches each tower's next one
  onto its device, holding up to --multi_device_iterator_max_buffer_size
  batches per tower on the host. Otherwise, and for a single tower on the
  host's own CPU, one host iterator is read once per tower.
  """
  host = host_device(tower_devices)
  devices = list(tower_devices)
  # One tower on the host CPU: the dataset's own prefetch already overlaps
  # input with the step, and there is no device to prefetch onto, so the
  # multi-device iterator would only add a thread and a buffer (~2% of the
  # CPU per image on real-data trivial; the original never used one on a
  # CPU).
  host_only = (len(devices) == 1 and
               tf.DeviceSpec.from_string(devices[0]).device_type == 'CPU')
  if (dataset_options.flag(params, 'datasets_use_prefetch', True) and
      len(set(devices)) == len(devices) and not host_only):
    with tf1.device(host), warnings.catch_warnings():
      # It reads dataset.options() in graph mode, which only warns that the
      # options may not be known yet; ours are set on the dataset itself.
      warnings.filterwarnings('ignore', message='To make it possible to '
                              'preserve tf.data options')
      iterator = multi_device_iterator_ops.MultiDeviceIterator(
          dataset, devices, source_device=host,
          max_buffer_size=dataset_options.flag(
              params, 'multi_device_iterator_max_buffer_size', 1))
      batches = iter(iterator.get_next())
      return to_towers(lambda: next(batches), devices), iterator.initializer
  with tf1.device(host):
    iterator = tf1.data.make_initializable_iterator(dataset)
    return to_towers(iterator.get_next, devices), iterator.initializer
