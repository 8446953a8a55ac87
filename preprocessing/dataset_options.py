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


def finish(dataset, params):
  """Caching of a sample, prefetch and threading options, last in line."""
  if flag(params, 'datasets_repeat_cached_sample', False):
    # Input-free benchmarking: one batch, served forever from memory.
    dataset = dataset.take(1).cache().repeat()
  if flag(params, 'datasets_use_prefetch', True):
    size = getattr(params, 'datasets_prefetch_buffer_size', 1)
    dataset = dataset.prefetch(tf.data.AUTOTUNE if size is None else size)
  options = tf.data.Options()
  threads = getattr(params, 'datasets_num_private_threads', None)
  if threads:
    # A private pool keeps input work off the threads that run the model.
    options.threading.private_threadpool_size = int(threads)
  options.autotune.enabled = True
  return dataset.with_options(options)
