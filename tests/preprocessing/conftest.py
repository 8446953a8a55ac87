"""Shared fixtures: small generated image folders, shards and CIFAR batches."""

import types

import pytest
import tensorflow as tf

from preprocessing import build_dataset
from preprocessing import diagnosis
from preprocessing import explain_data_error
from preprocessing import generated_data
from tests.niced_timeouts import wall_bound

tf1 = tf.compat.v1

NUM_CLASSES = 3  # generated classes; labels 1..3, so heads have 4 outputs.


def make_params(data_dir, **overrides):
  """A params namespace with the original's flag names and defaults."""
  values = dict(
      data_dir=data_dir, data_name=None, distortions=False,
      resize_method='bilinear', fuse_decode_and_crop=True,
      datasets_num_private_threads=None, datasets_use_prefetch=True,
      datasets_prefetch_buffer_size=1, datasets_use_caching=False,
      datasets_parallel_interleave_cycle_length=None, tf_random_seed=1234)
  values.update(overrides)
  return types.SimpleNamespace(**values)


@pytest.fixture(autouse=True)
def _rescan_bound_raised_when_niced(monkeypatch):
  # A data error names its record only if the re-scan ends inside this
  # bound: a wall-clock one, raised where the suite's niced phase raises
  # them (tests/niced_timeouts.py). A test may still set its own.
  monkeypatch.setattr(diagnosis, 'RESCAN_SECONDS',
                      wall_bound(diagnosis.RESCAN_SECONDS))


def two_cpu_config():
  return tf1.ConfigProto(device_count={'CPU': 2})


def run_batches(source, num_steps, devices=('/cpu:0',)):
  """Runs num_steps of source's tower batches; DataError on bad data."""
  graph = tf.Graph()
  with graph.as_default():
    pairs = source.tower_batches(list(devices))
    outputs = []
    with tf1.Session(config=two_cpu_config()) as sess:
      sess.run(tf1.local_variables_initializer())
      sess.run(source.initializers())
      for _ in range(num_steps):
        try:
          outputs.append(sess.run(pairs))
        except tf.errors.OpError as e:
          data_error = explain_data_error(e)
          if data_error is None:
            raise
          raise data_error from e
  return pairs, outputs


@pytest.fixture(scope='session')
def image_folder(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('images'))
  generated_data.make_image_folder(root, num_classes=NUM_CLASSES,
                                   images_per_class=10, height=48, width=64)
  return root


@pytest.fixture(scope='session')
def shards_dir(tmp_path_factory, image_folder):
  """train: 24 images in 2 shards; validation: 6 images in 1 shard."""
  out = str(tmp_path_factory.mktemp('shards'))
  build_dataset.build(image_folder, out, num_train_shards=2,
                      num_validation_shards=1, validation_fraction=0.2,
                      log=lambda *a: None)
  return out


@pytest.fixture(scope='session')
def cifar_dir(tmp_path_factory):
  return generated_data.make_cifar_batches(
      str(tmp_path_factory.mktemp('cifar')), images_per_batch=20)
