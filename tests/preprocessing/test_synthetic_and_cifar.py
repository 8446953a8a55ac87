"""Synthetic source, CIFAR-10 pipeline and the factory's choices."""

import os
import pickle

import numpy as np
import pytest
import tensorflow as tf

from preprocessing import cifar
from preprocessing import get_input_source
from preprocessing import synthetic
from preprocessing.errors import DataError
from tests.preprocessing.conftest import make_params, run_batches

tf1 = tf.compat.v1


def test_synthetic_one_pair_per_tower_on_its_device():
  src = get_input_source(make_params(None), 24, 1001, 3, 2, 'train')
  assert isinstance(src, synthetic.SyntheticInput)
  assert src.synthetic and src.description == 'imagenet (synthetic)'
  assert src.num_examples_per_epoch == 1281167
  pairs, outputs = run_batches(src, 3, devices=('/cpu:0', '/cpu:1'))
  assert len(pairs) == 2
  for i, (images, labels) in enumerate(pairs):
    assert images.device.endswith('CPU:%d' % i)
    assert labels.device.endswith('CPU:%d' % i)
    assert images.shape.as_list() == [3, 24, 24, 3]
    assert images.dtype == tf.float32 and labels.dtype == tf.int32
  # Drawn once: every step returns the same tensors.
  for step in outputs[1:]:
    for (a, b), (c, d) in zip(outputs[0], step):
      np.testing.assert_array_equal(a, c)
      np.testing.assert_array_equal(b, d)
  images = outputs[0][0][0]
  # The real pipelines' range: a truncated normal stays within 2 sd.
  assert -0.2 < images.mean() < 0.2
  assert images.min() >= -1.0 - 1e-6 and images.max() <= 1.0 + 1e-6
  assert all(0 <= l < 1001 for l in outputs[0][0][1])


def test_synthetic_variables_are_local_and_not_trainable():
  graph = tf.Graph()
  with graph.as_default():
    src = synthetic.SyntheticInput(8, 10, 2, 'cifar10', 'validation')
    src.tower_batches(['/cpu:0'])
    assert src.description == 'cifar10 (synthetic)'
    assert src.num_examples_per_epoch == 10000
    assert not tf1.trainable_variables() and not tf1.global_variables()
    assert len(tf1.local_variables()) == 2


@pytest.mark.timeout(120)
@pytest.mark.parametrize('subset', ['train', 'validation'])
def test_cifar_batches(cifar_dir, subset):
  # data_name unset: recognised by the batch files.
  src = get_input_source(make_params(cifar_dir), 32, 10, 8, 2, subset)
  assert isinstance(src, cifar.CifarInput) and src.description == 'cifar10'
  assert src.num_examples_per_epoch == (100 if subset == 'train' else 20)
  pairs, outputs = run_batches(src, 4, devices=('/cpu:0', '/cpu:1'))
  for step in outputs:
    assert len(step) == 2
    for images, labels in step:
      assert images.shape == (8, 32, 32, 3) and images.dtype == np.float32
      assert labels.dtype == np.int32 and set(labels) <= set(range(10))
      assert images.min() >= -1.0 and images.max() <= 1.0


def test_cifar_eval_matches_the_pickle(cifar_dir):
  src = get_input_source(make_params(cifar_dir, data_name='cifar10'), 32, 10,
                         4, 1, 'validation')
  _, outputs = run_batches(src, 1)
  images, labels = outputs[0][0]
  with open(os.path.join(cifar_dir, 'test_batch'), 'rb') as f:
    batch = pickle.load(f, encoding='bytes')
  np.testing.assert_array_equal(labels, batch[b'labels'][:4])
  expected = batch[b'data'][:4].reshape(4, 3, 32, 32).transpose(0, 2, 3, 1)
  np.testing.assert_allclose((images + 1.0) * 127.5, expected, atol=1e-3)


def test_cifar_bad_input(cifar_dir, tmp_path):
  with pytest.raises(DataError, match='missing'):
    get_input_source(make_params(str(tmp_path), data_name='cifar10'), 32, 10,
                     4, 1, 'train')
  (tmp_path / 'test_batch').write_bytes(b'not a pickle')
  with pytest.raises(DataError, match='test_batch'):
    get_input_source(make_params(str(tmp_path), data_name='cifar10'), 32, 10,
                     4, 1, 'validation')
  with open(os.path.join(cifar_dir, 'test_batch'), 'rb') as f:
    batch = pickle.load(f, encoding='bytes')
  batch[b'labels'][7] = 12
  with open(tmp_path / 'test_batch', 'wb') as f:
    pickle.dump(batch, f)
  with pytest.raises(DataError, match='image 7') as info:
    get_input_source(make_params(str(tmp_path), data_name='cifar10'), 32, 10,
                     4, 1, 'validation')
  assert info.value.index == 7


def test_unknown_data_name_is_rejected(tmp_path):
  with pytest.raises(ValueError, match='imagenet, cifar10'):
    get_input_source(make_params(str(tmp_path), data_name='coco'), 32, 10, 4,
                     1, 'train')


class _Hostile:
  """Unpickles as a call of os.system: what a planted batch file would do."""

  def __init__(self, marker):
    self.marker = marker

  def __reduce__(self):
    return (os.system, ('touch %s' % self.marker,))


def test_a_cifar_pickle_that_calls_a_function_is_refused(tmp_path):
  """Only what the CIFAR-10 layout needs is unpickled (a dict, lists,
  bytes, numbers, numpy arrays): a batch that would run a command is a
  DataError naming the file, and the command never runs."""
  marker = tmp_path / 'ran'
  with open(tmp_path / 'test_batch', 'wb') as f:
    pickle.dump({b'data': _Hostile(marker), b'labels': [0]}, f, protocol=2)
  with pytest.raises(DataError) as info:
    get_input_source(make_params(str(tmp_path), data_name='cifar10'), 32, 10,
                     4, 1, 'validation')
  assert not marker.exists()
  assert info.value.path == str(tmp_path / 'test_batch')
  assert str(tmp_path / 'test_batch') in str(info.value)
  assert 'posix.system' in str(info.value), str(info.value)


@pytest.mark.parametrize('protocol', ['python2', 2, 4, 5])
def test_cifar_pickles_of_every_protocol_still_load(tmp_path, protocol):
  """The real batches are Python 2 pickles (protocol 2, numpy.core's
  _reconstruct); numpy 2 writes numpy._core, and _frombuffer at 5."""
  data = np.arange(2 * cifar.IMAGE_BYTES, dtype=np.uint8).reshape(2, -1)
  text = pickle.dumps(
      {b'batch_label': b'testing batch 1 of 1', b'labels': [3, 9],
       b'data': data, b'filenames': [b'a.png', b'b.png']},
      protocol=2 if protocol == 'python2' else protocol)
  if protocol == 'python2':
    text = text.replace(b'numpy._core.multiarray', b'numpy.core.multiarray')
    assert b'numpy.core.multiarray\n_reconstruct' in text
  (tmp_path / 'test_batch').write_bytes(text)
  images, labels = cifar.load_batch(str(tmp_path / 'test_batch'))
  np.testing.assert_array_equal(images, data)
  assert labels.tolist() == [3, 9]
