"""ImageNet shards -> train/eval batches: shapes, range, placement."""

import numpy as np
import pytest

from preprocessing import get_input_source
from preprocessing import imagenet
from tests.preprocessing.conftest import NUM_CLASSES, make_params, run_batches

HEADS = NUM_CLASSES + 1  # 1001-way style: label 0 is background.


def source(shards_dir, subset, size=40, batch=4, **flags):
  return get_input_source(make_params(shards_dir, **flags), size, HEADS,
                          batch, 1, subset)


def check_batch(images, labels, size, batch):
  assert images.shape == (batch, size, size, 3)
  assert images.dtype == np.float32
  assert labels.shape == (batch,) and labels.dtype == np.int32
  assert images.min() >= -1.0 and images.max() <= 1.0
  assert set(labels) <= {1, 2, 3}


@pytest.mark.timeout(120)
@pytest.mark.parametrize('flags', [
    {},
    {'distortions': True, 'resize_method': 'bicubic'},
    {'fuse_decode_and_crop': False, 'resize_method': 'nearest',
     'datasets_num_private_threads': 2, 'datasets_use_caching': True},
    {'resize_method': 'round_robin', 'datasets_use_prefetch': False,
     'datasets_parallel_interleave_cycle_length': 1},
])
def test_train_batches(shards_dir, flags):
  src = source(shards_dir, 'train', **flags)
  assert isinstance(src, imagenet.ImageNetInput)
  assert src.description == 'imagenet' and not src.synthetic
  assert src.num_examples_per_epoch == 24
  # 10 steps of 4 = more than an epoch of 24: repeats without a gap.
  _, outputs = run_batches(src, 10)
  for ((images, labels),) in outputs:
    check_batch(images, labels, 40, 4)
  # Distorted crops differ from step to step.
  assert not np.allclose(outputs[0][0][0], outputs[6][0][0])


@pytest.mark.timeout(120)
def test_eval_is_deterministic_and_covers_the_split(shards_dir):
  runs = []
  for _ in range(2):
    src = source(shards_dir, 'validation', size=32, batch=3)
    assert src.num_examples_per_epoch == 6
    _, outputs = run_batches(src, 2)
    runs.append(outputs)
    for ((images, labels),) in outputs:
      check_batch(images, labels, 32, 3)
  for (a,), (b,) in zip(*runs):
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
  labels = np.concatenate([out[0][1] for out in runs[0]])
  assert sorted(labels) == [1, 1, 2, 2, 3, 3]


@pytest.mark.timeout(120)
def test_one_batch_per_tower_on_its_device(shards_dir):
  src = source(shards_dir, 'train', size=24, batch=2)
  pairs, outputs = run_batches(src, 2, devices=('/cpu:0', '/cpu:1'))
  assert len(pairs) == 2
  for i, (images, labels) in enumerate(pairs):
    assert images.device.endswith('CPU:%d' % i)
    assert labels.device.endswith('CPU:%d' % i)
  for step in outputs:
    for images, labels in step:
      check_batch(images, labels, 24, 2)


def test_bad_resize_method_is_rejected_up_front(shards_dir):
  with pytest.raises(ValueError, match='bilinear'):
    source(shards_dir, 'train', resize_method='lanczos')
