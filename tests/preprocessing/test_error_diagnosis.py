"""The fast ImageNet pipeline: no per-record bookkeeping, and a failure is
traced to its record by re-reading shards (preprocessing/diagnosis.py).

The cases of bad data and their messages are in test_bad_input.py; these
tests cover how the record is found and what bounds the search.
"""

import glob
import os

import pytest
import tensorflow as tf

from preprocessing import diagnosis
from preprocessing import errors
from preprocessing import imagenet
from preprocessing import imagenet_format as fmt
from preprocessing.errors import DataError
from tests.preprocessing.conftest import NUM_CLASSES, make_params, run_batches
from tests.preprocessing.test_bad_input import (example_with, good_records,
                                                write_shard)

HEADS = NUM_CLASSES + 1


def source(data_dir, subset='train', checked=False, batch=2):
  return imagenet.ImageNetInput(make_params(data_dir), 24, HEADS, batch,
                                subset, checked=checked)


def dataset_ops(src):
  graph = tf.Graph()
  with graph.as_default():
    src.make_dataset()
  return {node.op for node in graph.as_graph_def().node}


def bad_label_shards(tmp_path, shards_dir, num_shards=3, bad_shard=2):
  good = good_records(shards_dir)
  paths = []
  for i in range(num_shards):
    records = list(good)
    if i == bad_shard:
      records[3] = example_with(records[3], **{fmt.LABEL: 1000})
    paths.append(write_shard(str(tmp_path), records, subset='train',
                             index=i, total=num_shards))
  return paths


def test_fast_pipeline_carries_no_identity_per_record(shards_dir):
  # The numbering/identity scans are what cost ~15% CPU per image.
  assert 'ScanDataset' not in dataset_ops(source(shards_dir))
  assert 'ScanDataset' in dataset_ops(source(shards_dir, checked=True))


def test_shard_log_orders_shards_by_latest_opening():
  log = diagnosis.ShardLog()
  for path in ('a', 'b', 'c', 'a'):
    log.note(path)
  assert log.newest_first(['a', 'b', 'c', 'd']) == ['a', 'c', 'b', 'd']


@pytest.mark.timeout(60)
def test_the_fast_pipeline_notes_each_shard_it_opens(shards_dir):
  src = source(shards_dir)
  run_batches(src, 2)
  paths = sorted(glob.glob(os.path.join(shards_dir, 'train-*')))
  assert src.shard_log.last_opened >= 0
  assert src.shard_log._opened.keys() == set(paths)  # pylint: disable=protected-access


@pytest.mark.timeout(60)
def test_the_checked_pipeline_still_names_the_record(tmp_path, shards_dir,
                                                     monkeypatch):
  # The benchmark's baseline: it names the record itself, no re-scan.
  paths = bad_label_shards(tmp_path, shards_dir)
  monkeypatch.setattr(diagnosis, 'locate', None)
  with pytest.raises(DataError) as info:
    run_batches(source(str(tmp_path), checked=True), 30)
  assert (info.value.path, info.value.index) == (paths[2], 3)


@pytest.mark.timeout(60)
def test_a_rescan_out_of_time_says_it_could_not_pin_the_record(
    tmp_path, shards_dir, monkeypatch):
  bad_label_shards(tmp_path, shards_dir)
  monkeypatch.setattr(diagnosis, 'RESCAN_SECONDS', 0.0)
  with pytest.raises(DataError) as info:
    run_batches(source(str(tmp_path)), 30)
  message = str(info.value)
  assert info.value.path is None and info.value.index is None
  assert 'could not pin' in message and '(found 1000)' in message
  assert 're-read 0 of the 3 shards' in message and 'time limit' in message


@pytest.mark.timeout(60)
def test_the_error_is_explained_once(tmp_path, shards_dir, monkeypatch):
  paths = bad_label_shards(tmp_path, shards_dir)
  calls = []
  rescan = imagenet.checked_reading.rescan
  monkeypatch.setattr(imagenet.checked_reading, 'rescan',
                      lambda *a: calls.append(1) or rescan(*a))
  src = source(str(tmp_path))
  graph = tf.Graph()
  with graph.as_default():
    pairs = src.tower_batches(['/cpu:0'])
    with tf.compat.v1.Session() as sess:
      sess.run(src.initializers())
      with pytest.raises(tf.errors.InvalidArgumentError) as info:
        for _ in range(30):
          sess.run(pairs)
  first = errors.explain_data_error(info.value)
  again = errors.explain_data_error(info.value)
  assert first is again and first.path == paths[2] and first.index == 3
  assert len(calls) == 1


def test_other_errors_and_peers_errors_are_not_rescanned(shards_dir,
                                                         monkeypatch):
  src = source(shards_dir)
  src.shard_log.note(src.paths[0])

  def fail(deadline):
    raise AssertionError('re-scanned')
  monkeypatch.setattr(src, 'locate_bad_record', fail)
  nan = tf.errors.InvalidArgumentError(None, None, 'Tensor had NaN values')
  assert errors.explain_data_error(nan) is None
  # A collective abort carries a peer's error: this task's data is fine.
  peer = tf.errors.InvalidArgumentError(
      None, None, 'Collective ops is aborted by: assertion failed: '
      '[DATA_ERROR_BEGIN] [4] [-1] [1000] [%s] [DATA_ERROR_END]' % src.token)
  error = errors.explain_data_error(peer)
  assert isinstance(error, DataError) and '(found 1000)' in str(error)
  assert 'came from another task' in str(error)
