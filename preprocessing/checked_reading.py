"""tf.data stages that turn read/decode failures into errors naming the file.

Not on the fast path: the ImageNet pipeline reads without these stages and,
only when it fails, `rescan` re-reads shards through them to find the bad
record (see diagnosis). The up-front first-record check uses them too.

TensorFlow's own errors here name no file: the TFRecord reader says only
"corrupted record at 128", the JPEG decoder "Invalid JPEG data". So every
element carries its identity (`file`, `index` within the file) and an
`error` code, and failures become data until one check at the end:

* `read_shard` reads one TFRecord file with reader errors swallowed and
  counts the bytes it got. It ends with one extra element: a SKIP marker
  when the whole file was read, else one flagged CORRUPT_RECORD at the
  index of the first record it could not read.
* `map_checked` numbers the elements (SKIP markers share their successor's
  number), runs the map (parallel, in order) and drops elements whose map
  failed (and the SKIP markers, which fail on purpose). Each element also
  carries its predecessor's identity, so after batching a vectorised check
  sees a gap in the numbers and can name the record that was dropped. It
  then fails a tf.debugging.Assert whose data `errors.explain_data_error`
  decodes.

Why this shape: each tf.data stage costs tens of microseconds per element
on a busy CPU, so per element there are only two small scans (per shard,
and numbering) and the check runs once per batch. Still ~15% of the CPU
per image, hence only on the failure path (preprocessing/README.md).

Dropping would loop forever if every record of a repeated dataset failed;
`rescan` reads each shard once and then a record known to be good (the
sources check their first record up front).
"""

import time
import warnings

import tensorflow as tf

from preprocessing import errors

tf1 = tf.compat.v1

# Bytes of TFRecord framing around each record's data: length (8), CRC of
# the length (4), CRC of the data (4).
_RECORD_OVERHEAD = 16


def _identity(record, path, index, error):
  return {'record': record, 'file': path, 'index': index,
          'error': tf.cast(error, tf.int32)}


def read_shard(path, size, buffer_size=None):
  """Dataset of one shard's records as identity dicts (never fails)."""
  size = tf.cast(size, tf.int64)
  records = tf.data.TFRecordDataset(path, buffer_size=buffer_size)
  # A reader error ends this file's dataset (TFRecordDataset moves on to
  # the next file, and this one has no next file). An empty string marks
  # the end.
  records = records.ignore_errors().concatenate(
      tf.data.Dataset.from_tensors(tf.constant('')))

  def count(state, record):
    bytes_read, num_read = state
    # Once every byte is accounted for, only the end marker can follow. An
    # empty string before that is the end marker after a short read (or an
    # empty record, which is no valid example either): flag it.
    whole = tf.equal(bytes_read, size)
    empty = tf.equal(tf.strings.length(record), 0)
    code = tf.where(whole, errors.SKIP,
                    tf.where(empty, errors.CORRUPT_RECORD, errors.OK))
    new_state = (bytes_read + tf.cast(tf.strings.length(record), tf.int64) +
                 _RECORD_OVERHEAD, num_read + 1)
    return new_state, _identity(record, path, num_read, code)

  zero = tf.constant(0, tf.int64)
  return records.scan((zero, zero), count)


def map_checked(dataset, fn, batch_size, num_parallel_calls):
  """Maps identity dicts through fn and batches, failing on bad elements.

  fn(element) -> (outputs, error, detail): outputs a tuple of tensors,
  error an int32 code (element['error'] when fn found nothing new) and
  detail an int64 shown in the message (e.g. the bad label). fn must not do
  expensive work for elements whose error is already set.
  Returns a dataset of batched `outputs` (drop_remainder).
  """
  def number(state, element):
    # SKIP markers take no number (they are dropped on purpose below) and
    # are nobody's predecessor.
    seq, prev_file, prev_index = state
    out = dict(element, seq=seq, prev_file=prev_file, prev_index=prev_index)
    skip = tf.equal(element['error'], errors.SKIP)
    state = (seq + tf.where(skip, tf.constant(0, tf.int64),
                            tf.constant(1, tf.int64)),
             tf.where(skip, prev_file, element['file']),
             tf.where(skip, prev_index, element['index']))
    return state, out

  dataset = dataset.scan(
      (tf.constant(0, tf.int64), tf.constant(''), tf.constant(-1, tf.int64)),
      number)

  def apply(element):
    outputs, error, detail = fn(element)
    not_skip = tf.debugging.Assert(
        tf.not_equal(element['error'], errors.SKIP), ['skip'])
    with tf.control_dependencies([not_skip]):
      outputs = tf.nest.map_structure(tf.identity, outputs)
    meta = {k: element[k] for k in ('seq', 'file', 'index', 'prev_file',
                                    'prev_index')}
    meta['error'] = error
    meta['detail'] = tf.cast(detail, tf.int64)
    return outputs, meta

  with warnings.catch_warnings():
    # Unseeded random ops in fn take op seeds from the graph seed; that is
    # intended (reproducible runs), so TensorFlow's warning is only noise.
    warnings.filterwarnings('ignore', message='Seed .* from outer graph')
    # In order: the gap check below relies on the numbering.
    dataset = dataset.map(apply, num_parallel_calls=num_parallel_calls,
                          deterministic=True)
  dataset = dataset.ignore_errors()
  dataset = dataset.batch(batch_size, drop_remainder=True)
  return dataset.scan(tf.constant(-1, tf.int64), _check_batch)


def _check_batch(last_seq, batch):
  """Asserts a batch holds no flagged element and follows on without gaps."""
  outputs, meta = batch
  seqs = meta['seq']
  before = tf.concat([tf.reshape(last_seq, [1]), seqs[:-1]], 0)
  dropped_count = seqs - before - 1
  dropped = dropped_count > 0
  error = tf.where(dropped, errors.UNDECODABLE, meta['error'])
  bad = tf.not_equal(error, errors.OK)
  first = tf.argmax(tf.cast(bad, tf.int32), output_type=tf.int32)
  path = tf.where(dropped, meta['prev_file'], meta['file'])[first]
  index = tf.where(dropped, meta['prev_index'], meta['index'])[first]
  # For a dropped record, the detail is how many more were dropped.
  detail = tf.where(dropped, dropped_count - 1, meta['detail'])[first]
  assertion = tf.debugging.Assert(
      tf.logical_not(tf.reduce_any(bad)),
      errors.marker_data(error[first], path, index, detail))
  with tf.control_dependencies([assertion]):
    outputs = tf.nest.map_structure(tf.identity, outputs)
  return seqs[-1], outputs


def rescan(shards, make_preprocess, good_record, deadline):
  """Re-reads shards with every check; (DataError or None, shards done).

  shards: [(path, size)] in the order to read them; a file whose size
  changed since is skipped (it is not what was read; still done). make_preprocess():
  the fn of map_checked, made in the re-scan's graph. good_record: a
  serialized record that passes it, read after each shard so that a
  failing last record still has a successor to reveal its gap. Stops before a shard once
  time.monotonic() > deadline. The DataError names the first bad record
  of the first shard that has one, exactly as the checked pipeline did.
  """
  graph = tf.Graph()
  with graph.as_default():
    path = tf1.placeholder(tf.string, [])
    size = tf1.placeholder(tf.int64, [])
    sentinel = tf.data.Dataset.from_tensors(_identity(
        tf.constant(good_record), tf.constant(''),
        tf.constant(-1, tf.int64), errors.OK))
    batches = map_checked(read_shard(path, size).concatenate(sentinel),
                          make_preprocess(), 1,
                          num_parallel_calls=tf.data.AUTOTUNE)
    # One Session.run per shard: the reduction runs it to the end.
    run_through = batches.reduce(tf.constant(0, tf.int64),
                                 lambda count, _: count + 1)
  read = 0
  with tf1.Session(graph=graph) as sess:
    for shard, shard_size in shards:
      if time.monotonic() >= deadline:
        break
      read += 1
      if not tf.io.gfile.exists(shard) or \
          tf.io.gfile.stat(shard).length != shard_size:
        continue
      try:
        sess.run(run_through, {path: shard, size: shard_size})
      except tf.errors.OpError as e:
        found = errors.located_error(e)
        if found is not None:
          return found, read
  return None, read
