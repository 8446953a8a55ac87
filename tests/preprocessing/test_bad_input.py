"""Bad input -> DataError naming the file (and record), never a hang."""

import glob
import os

import pytest
import tensorflow as tf

from preprocessing import build_dataset
from preprocessing import errors
from preprocessing import get_input_source
from preprocessing import imagenet_format as fmt
from preprocessing.errors import DataError
from tests.preprocessing.conftest import NUM_CLASSES, make_params, run_batches

HEADS = NUM_CLASSES + 1


def good_records(shards_dir, count=6):
  path = sorted(glob.glob(os.path.join(shards_dir, 'train-*')))[0]
  records = list(tf.compat.v1.io.tf_record_iterator(path))
  return records[:count]


def example_with(record, **changes):
  """A copy of a serialized example with some features replaced."""
  example = tf.train.Example.FromString(record)
  for key, value in changes.items():
    feature = example.features.feature[key]
    if isinstance(value, int):
      feature.int64_list.value[:] = [value]
    else:
      feature.bytes_list.value[:] = [value]
  return example.SerializeToString()


def write_shard(directory, records, subset='validation', index=0, total=1):
  os.makedirs(directory, exist_ok=True)
  path = os.path.join(directory, fmt.shard_name(subset, index, total))
  return build_dataset.write_records(path, records)


def read_all(data_dir, subset='validation', steps=8, batch=2):
  src = get_input_source(make_params(data_dir), 24, HEADS, batch, 1, subset)
  run_batches(src, steps)


def expect_data_error(data_dir, path, index, code, subset='validation'):
  with pytest.raises(DataError) as info:
    read_all(data_dir, subset)
  error = info.value
  message = str(error)
  assert error.path == path and path in message
  assert error.index == index and ('record %d of' % index) in message
  what = errors.describe(code, path, index)
  # The reason's wording (first clause after the location) matches.
  assert str(what).split(': ', 1)[1][:40] in message
  return message


def test_missing_data_dir(tmp_path):
  missing = str(tmp_path / 'no_such_dir')
  with pytest.raises(DataError, match='no_such_dir'):
    get_input_source(make_params(missing), 24, HEADS, 2, 1, 'train')


def test_no_matching_shards(tmp_path):
  (tmp_path / 'train-0.tfrecord').write_bytes(b'')
  with pytest.raises(DataError, match='No train shards') as info:
    get_input_source(make_params(str(tmp_path)), 24, HEADS, 2, 1, 'train')
  assert str(tmp_path) in str(info.value)
  assert 'build-dataset' in str(info.value)


def test_only_empty_shards(tmp_path):
  write_shard(str(tmp_path), [], subset='train')
  with pytest.raises(DataError, match='empty'):
    get_input_source(make_params(str(tmp_path)), 24, HEADS, 2, 1, 'train')


@pytest.mark.timeout(60)
def test_corrupt_record(tmp_path, shards_dir):
  records = good_records(shards_dir)
  path = write_shard(str(tmp_path), records)
  data = bytearray(open(path, 'rb').read())
  # Flip a byte inside record 3's data: its checksum no longer matches.
  offset = sum(len(r) + 16 for r in records[:3]) + 12 + 100
  data[offset] ^= 0xFF
  open(path, 'wb').write(bytes(data))
  expect_data_error(str(tmp_path), path, 3, errors.CORRUPT_RECORD)


@pytest.mark.timeout(60)
def test_truncated_shard(tmp_path, shards_dir):
  records = good_records(shards_dir)
  path = write_shard(str(tmp_path), records)
  size = sum(len(r) + 16 for r in records[:4]) + 50
  data = open(path, 'rb').read()[:size]
  open(path, 'wb').write(data)
  expect_data_error(str(tmp_path), path, 4, errors.CORRUPT_RECORD)


@pytest.mark.timeout(60)
def test_not_a_tfrecord_file_at_all(tmp_path):
  path = os.path.join(str(tmp_path), fmt.shard_name('validation', 0, 1))
  with open(path, 'w') as f:
    f.write('this is a text file, not TFRecords\n' * 20)
  expect_data_error(str(tmp_path), path, 0, errors.CORRUPT_RECORD)


@pytest.mark.timeout(60)
def test_png_instead_of_jpeg(tmp_path, shards_dir):
  records = good_records(shards_dir)
  png = tf.io.encode_png(tf.zeros([8, 8, 3], tf.uint8)).numpy()
  records[2] = example_with(records[2], **{fmt.ENCODED: png})
  path = write_shard(str(tmp_path), records)
  message = expect_data_error(str(tmp_path), path, 2, errors.NOT_JPEG)
  assert 'not a JPEG' in message


@pytest.mark.timeout(60)
def test_label_out_of_range(tmp_path, shards_dir):
  records = good_records(shards_dir)
  records[4] = example_with(records[4], **{fmt.LABEL: 1000})
  path = write_shard(str(tmp_path), records)
  message = expect_data_error(str(tmp_path), path, 4, errors.BAD_LABEL)
  assert 'label' in message and '(found 1000)' in message


@pytest.mark.timeout(60)
def test_truncated_jpeg(tmp_path, shards_dir):
  records = good_records(shards_dir)
  example = tf.train.Example.FromString(records[1])
  jpeg = example.features.feature[fmt.ENCODED].bytes_list.value[0]
  records[1] = example_with(records[1], **{fmt.ENCODED: jpeg[:len(jpeg) // 2]})
  path = write_shard(str(tmp_path), records)
  expect_data_error(str(tmp_path), path, 1, errors.UNDECODABLE)


@pytest.mark.timeout(60)
def test_unparsable_record_last_in_epoch(tmp_path, shards_dir):
  # The last record of the only shard: found via the end-of-epoch marker.
  records = good_records(shards_dir, 3) + [b'not a tf.train.Example']
  path = write_shard(str(tmp_path), records)
  expect_data_error(str(tmp_path), path, 3, errors.UNDECODABLE)


def test_bad_first_record_is_found_before_the_graph(tmp_path, shards_dir):
  # Nothing readable at all: caught at construction, no graph, no hang.
  path = write_shard(str(tmp_path), [b'garbage %d' % i for i in range(5)])
  with pytest.raises(DataError) as info:
    get_input_source(make_params(str(tmp_path)), 24, HEADS, 2, 1,
                     'validation')
  assert info.value.path == path and info.value.index == 0
  records = good_records(shards_dir, 2)
  records[0] = example_with(records[0], **{fmt.LABEL: 4000})
  write_shard(str(tmp_path), records)
  with pytest.raises(DataError, match=r'record 0 of .*found 4000'):
    get_input_source(make_params(str(tmp_path)), 24, HEADS, 2, 1,
                     'validation')


@pytest.mark.timeout(60)
def test_all_but_one_record_undecodable(tmp_path, shards_dir):
  records = good_records(shards_dir, 1) + [b'garbage %d' % i
                                           for i in range(5)]
  path = write_shard(str(tmp_path), records)
  with pytest.raises(DataError) as info:
    read_all(str(tmp_path))
  assert info.value.path == path
  assert info.value.index == 5 and 'more record' in str(info.value)


@pytest.mark.timeout(60)
def test_train_pipeline_names_the_file_too(tmp_path, shards_dir):
  good = good_records(shards_dir)
  write_shard(str(tmp_path), good, subset='train', index=0, total=2)
  bad = list(good)
  bad[5] = example_with(bad[5], **{fmt.LABEL: -3})
  path = write_shard(str(tmp_path), bad, subset='train', index=1, total=2)
  expect_data_error(str(tmp_path), path, 5, errors.BAD_LABEL, subset='train')


def test_explain_data_error_leaves_other_errors_alone():
  assert errors.explain_data_error(ValueError('unrelated')) is None
  oom = tf.errors.ResourceExhaustedError(None, None, 'OOM when allocating')
  assert errors.explain_data_error(oom) is None
  loss = tf.errors.DataLossError(None, None, 'corrupted record at 12')
  assert isinstance(errors.explain_data_error(loss), DataError)
  same = DataError('x')
  assert errors.explain_data_error(same) is same
