"""Where input pipelines run, given the towers they feed."""

import tensorflow as tf

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
