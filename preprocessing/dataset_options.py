"""The --datasets_* flags, applied to a tf.data pipeline.

`params` is read with getattr and the original's defaults, so a source can
be built from a partial namespace (tests, the input-only benchmark).
"""

import tensorflow as tf

# The original's parallel interleave cycle length when the flag is unset.
DEFAULT_CYCLE_LENGTH = 10
# Records held in the training shuffle buffer (as the original).
SHUFFLE_BUFFER = 10000


def flag(params, name, default=None):
  value = getattr(params, name, default)
  return default if value is None else value


def cycle_length(params):
  return flag(params, 'datasets_parallel_interleave_cycle_length',
              DEFAULT_CYCLE_LENGTH)


def map_parallel_calls(params, batch_size_per_tower):
  """Elements preprocessed at once: a batch for each of this process's
  towers, as the original's map_and_batch had in flight (its batch per
  split times its splits).

  tf.data's AUTOTUNE kept fewer in flight while the model ran beside the
  pipeline: on real-data trivial (2 cores) the process kept 1.7-1.8 cores
  busy with it and 1.9-1.96 with this, 10% more images/sec, at the same
  CPU per image (PERFORMANCE.md, "Where the time went").
  """
  towers = max(1, int(flag(params, 'num_gpus', 1)))
  return int(batch_size_per_tower) * towers


def interleave(files, read_file, params, num_files, training):
  """Reads the files' records through a parallel interleave.

  tf.data's legacy parallel interleave, as the original read its shards:
  a thread per shard in the cycle, each reading ahead. Input-only on
  generated ImageNet shards, 6 alternating rounds, it took 2-3% less CPU
  per image than Dataset.interleave with AUTOTUNE or fixed parallel calls
  (PERFORMANCE.md, "Where the time went").

  --datasets_sloppy_parallel_interleave lets training take whichever file is
  ready first (eval always reads in a fixed order);
  --datasets_parallel_interleave_prefetch sets how many files are opened
  ahead of the interleave needing them (default: twice the cycle).
  """
  cycle = min(cycle_length(params), num_files)
  sloppy = bool(training and flag(
      params, 'datasets_sloppy_parallel_interleave', False))
  prefetch = flag(params, 'datasets_parallel_interleave_prefetch', None)
  logger = tf.get_logger()
  level = logger.level
  # Deprecated in favour of Dataset.interleave, which was slower here (see
  # above); its one-time notice would only confuse a user of this tool.
  logger.setLevel('ERROR')
  try:
    transformation = tf.data.experimental.parallel_interleave(
        read_file, cycle_length=cycle, sloppy=sloppy,
        prefetch_input_elements=None if prefetch is None else int(prefetch))
  finally:
    logger.setLevel(level)
  return files.apply(transformation)


def repeat_cached_sample(records, params, is_record=None):
  """--datasets_repeat_cached_sample: the first record, forever.

  Applied to records as they are read, so parsing and preprocessing still
  run per element and only the disk is taken out of the measurement.
  is_record(element) tells records from markers a reader adds, which must
  not be the one repeated.
  """
  if not flag(params, 'datasets_repeat_cached_sample', False):
    return records
  if is_record is not None:
    records = records.filter(is_record)
  return records.take(1).cache().repeat()


def finish(dataset, params):
  """Prefetch and threading options, last in line.

  tf.data's autotuner is off: every buffer and parallelism in these
  pipelines is set (from the flags, as the original set them), so it has
  nothing to tune, and keeping its model of the pipeline cost ~3% of the
  CPU per image (input-only, 6 alternating rounds; PERFORMANCE.md).
  """
  if flag(params, 'datasets_use_prefetch', True):
    dataset = dataset.prefetch(
        flag(params, 'datasets_prefetch_buffer_size', 1))
  options = tf.data.Options()
  threads = getattr(params, 'datasets_num_private_threads', None)
  if threads:
    # A private pool keeps input work off the threads that run the model.
    options.threading.private_threadpool_size = int(threads)
  options.autotune.enabled = False
  return dataset.with_options(options)
