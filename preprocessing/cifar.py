"""CIFAR-10 python-version batches -> per-tower batches.

Reads data_batch_1..5 (train) or test_batch (validation): pickled dicts with
b'data' uint8 [N, 3072] (R, G and B planes of 32x32) and b'labels'. The
pickles are loaded and checked in Python at construction (all errors are
DataErrors then), and rewritten as fixed-length binary records in a file
that is unlinked at once and read through /proc/PID/fd, so tf.data reads
them in-graph without embedding 150 MB of constants in the GraphDef (and in
every checkpoint's meta graph), and the file is gone however the process
ends (a cluster task leaves by os._exit, past atexit; a SIGKILL too).

Scaling: to [-1, 1] (x / 127.5 - 1), the same range as the ImageNet
pipeline, so models see one input range whichever dataset they train on.
Training: pad 4 pixels (zeros), random 32x32 crop, random left-right flip.
"""

import _codecs
import os
import pickle
import tempfile

import numpy as np
import tensorflow as tf

from preprocessing import base
from preprocessing import dataset_options
from preprocessing import devices
from preprocessing import image_ops
from preprocessing.errors import DataError

tf1 = tf.compat.v1

TRAIN_FILES = tuple('data_batch_%d' % i for i in range(1, 6))
EVAL_FILES = ('test_batch',)
IMAGE_BYTES = 32 * 32 * 3
NUM_CLASSES = 10


def _numpy_function(module, name):
  """numpy's own pickle helper, wherever this numpy keeps it (numpy 2
  renamed numpy.core to numpy._core)."""
  core = getattr(np, '_core', None) or np.core
  return getattr(getattr(core, module), name)


# Everything a CIFAR-10 batch's pickle may name, as written by Python 2's
# cPickle (the real files: numpy.core.multiarray._reconstruct, ndarray,
# dtype) or by Python 3 (protocol 2 adds _codecs.encode for bytes; 5 uses
# _frombuffer). A dict, lists, bytes, str and numbers need no global.
_ALLOWED_GLOBALS = {
    ('numpy.core.multiarray', '_reconstruct'): ('multiarray', '_reconstruct'),
    ('numpy._core.multiarray', '_reconstruct'): ('multiarray',
                                                 '_reconstruct'),
    ('numpy.core.numeric', '_frombuffer'): ('numeric', '_frombuffer'),
    ('numpy._core.numeric', '_frombuffer'): ('numeric', '_frombuffer'),
}


class _BatchUnpickler(pickle.Unpickler):
  """Unpickles only what the CIFAR-10 python layout needs: --data_dir is
  not trusted to run code, and any other global (os.system, a class's
  constructor) is how a planted pickle would."""

  def find_class(self, module, name):
    if (module, name) in _ALLOWED_GLOBALS:
      return _numpy_function(*_ALLOWED_GLOBALS[(module, name)])
    if module == 'numpy' and name in ('ndarray', 'dtype'):
      return getattr(np, name)
    if (module, name) == ('_codecs', 'encode'):
      return _codecs.encode
    raise pickle.UnpicklingError(
        'refused global %s.%s: a CIFAR-10 batch holds only a dict of numpy '
        'arrays, lists, bytes and numbers, so this file is not one (and '
        'loading it would have run code)' % (module, name))


def load_batch(path, num_classes=NUM_CLASSES):
  """(images uint8 [N, 3072], labels uint8 [N]) of one pickle, checked."""
  try:
    with open(path, 'rb') as f:
      batch = _BatchUnpickler(f, encoding='bytes').load()
    data = np.asarray(batch[b'data'], dtype=np.uint8)
    labels = np.asarray(batch[b'labels'], dtype=np.int64)
  except (OSError, pickle.UnpicklingError, EOFError, KeyError, TypeError,
          ValueError, AttributeError) as e:
    raise DataError(
        'Cannot read CIFAR-10 batch %s (%s: %s). It must be a batch of the '
        'python version of CIFAR-10 (a pickled dict with b\'data\' and '
        'b\'labels\'); re-download or re-extract cifar-10-python.tar.gz.'
        % (path, type(e).__name__, e), path=path) from None
  if data.ndim != 2 or data.shape[1] != IMAGE_BYTES or \
      len(labels) != data.shape[0]:
    raise DataError(
        'CIFAR-10 batch %s has data of shape %s and %d labels; expected '
        '[N, %d] and N labels. Re-extract the python version of CIFAR-10.'
        % (path, data.shape, len(labels), IMAGE_BYTES), path=path)
  bad = np.flatnonzero((labels < 0) | (labels >= num_classes))
  if bad.size:
    raise DataError(
        'CIFAR-10 batch %s: label %d of image %d is outside 0..%d. The file '
        'is damaged or not CIFAR-10; re-extract it.'
        % (path, labels[bad[0]], bad[0], num_classes - 1),
        path=path, index=int(bad[0]))
  return data, labels.astype(np.uint8)


# The open files of the records written (see _records_file): closed by
# the process's end, which frees them.
_OPEN_RECORDS = []


def _records_file(array):
  """A path tf.data can read ``array``'s bytes at, of a file no longer in
  any folder: its only link is this process's open descriptor, so the
  kernel frees it when the process ends, by any exit or signal."""
  with tempfile.NamedTemporaryFile(prefix='cifar10_records_',
                                   suffix='.bin', delete=False) as f:
    array.tofile(f)
  kept = open(f.name, 'rb')  # pylint: disable=consider-using-with
  os.unlink(f.name)
  _OPEN_RECORDS.append(kept)
  # By pid, not "self": in a distributed_all_reduce cluster a worker on
  # this host runs the controller's input ops, and opens it from there.
  return '/proc/%d/fd/%d' % (os.getpid(), kept.fileno())


class CifarInput(base.InputSource):
  """CIFAR-10 from params.data_dir, float32 NHWC in [-1, 1]."""

  synthetic = False
  description = 'cifar10'

  def __init__(self, params, image_size, num_classes, batch_size_per_tower,
               subset='train'):
    if subset not in ('train', 'validation'):
      raise ValueError('subset must be train or validation, got %r' % subset)
    data_dir = params.data_dir
    if not data_dir or not os.path.isdir(data_dir):
      raise DataError(
          'Data directory %r does not exist. Pass --data_dir with the '
          'extracted cifar-10-batches-py folder (data_batch_1..5, '
          'test_batch).' % (data_dir,), path=data_dir)
    names = TRAIN_FILES if subset == 'train' else EVAL_FILES
    missing = [n for n in names if not os.path.isfile(
        os.path.join(data_dir, n))]
    if missing:
      raise DataError(
          'CIFAR-10 %s files missing in %s: %s. Pass --data_dir with the '
          'extracted cifar-10-batches-py folder (python version).'
          % (subset, data_dir, ', '.join(missing)), path=data_dir)
    self._params = params
    self._size = (image_size if isinstance(image_size, (tuple, list))
                  else (image_size, image_size))
    self._batch_size = int(batch_size_per_tower)
    self._training = subset == 'train'
    self._records_path = self._write_records(
        [os.path.join(data_dir, n) for n in names], num_classes)
    self._initializer = None

  def _write_records(self, paths, num_classes):
    """Label byte + 3072 image bytes per record (the CIFAR binary layout)."""
    parts = [load_batch(p, min(num_classes, NUM_CLASSES)) for p in paths]
    data = np.concatenate([d for d, _ in parts])
    labels = np.concatenate([l for _, l in parts])
    self.num_examples_per_epoch = int(len(labels))
    return _records_file(np.concatenate([labels[:, None], data], axis=1))

  def tower_batches(self, tower_devices):
    with tf1.device(devices.host_device(tower_devices)):
      with tf1.name_scope('cifar10_input'):
        pairs, self._initializer = devices.tower_batches(
            self.make_dataset(), tower_devices, self._params)
        return pairs

  def initializers(self):
    return [self._initializer] if self._initializer is not None else []

  def make_dataset(self):
    seed = getattr(self._params, 'tf_random_seed', None)
    records = tf.data.FixedLengthRecordDataset(self._records_path,
                                               IMAGE_BYTES + 1)
    records = dataset_options.repeat_cached_sample(records, self._params)
    if dataset_options.flag(self._params, 'datasets_use_caching', False):
      records = records.cache()
    if self._training:
      records = records.shuffle(dataset_options.SHUFFLE_BUFFER, seed=seed)
    records = records.repeat()
    examples = records.map(self._preprocess, num_parallel_calls=(
        dataset_options.map_parallel_calls(self._params, self._batch_size)))
    batches = examples.batch(self._batch_size, drop_remainder=True)
    return dataset_options.finish(batches, self._params)

  def _preprocess(self, record):
    raw = tf.io.decode_raw(record, tf.uint8)
    label = tf.cast(raw[0], tf.int32)
    image = tf.transpose(tf.reshape(raw[1:], [3, 32, 32]), [1, 2, 0])
    image = tf.cast(image, tf.float32)
    if self._training:
      image = tf.image.pad_to_bounding_box(image, 4, 4, 40, 40)
      image = tf.image.random_crop(image, [32, 32, 3])
      image = tf.image.random_flip_left_right(image)
    if tuple(self._size) != (32, 32):
      image = tf.image.resize(image, self._size)
    image.set_shape([self._size[0], self._size[1], 3])
    # Padding, cropping and bilinear resizing stay within [0, 255].
    return image_ops.scale_to_unit_range(image, clip=False), label
