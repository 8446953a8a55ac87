"""The run's input, fed to the strategy through distribute_datasets_from_function.

``dataset_fn`` returns batches of --batch_size (per device, as in the graph
engine); the strategy deals one batch to each replica in turn, as the graph
engine's MultiDeviceIterator deals them to its towers.

Synthetic data: the graph engine's very batches (preprocessing/synthetic.py
``eager_batches``: same seeds, same draw), one per tower, repeated forever,
so every step reads the same batches, as the graph engine's held ones.
(Under ParameterServerStrategy every worker's dataset cycles through the
cluster's towers' batches: a worker is not tied to one tower there.)
Real data: the source's own tf.data pipeline (``make_dataset``), the one
the graph engine iterates.
"""

import tensorflow as tf


def distributed_iterator(strategy, rc, source, coordinator=None):
  """An iterator of per-replica (inputs, labels) batches; with a
  ParameterServerStrategy's ``coordinator``, one on every worker (its
  create_per_worker_dataset), which a step scheduled there reads."""
  if source.synthetic:
    pairs = source.eager_batches(rc.num_towers)
    inputs = tf.stack([x for x, _ in pairs])
    labels = tf.stack([y for _, y in pairs])

    def dataset_fn(context):
      del context  # one pipeline per worker, feeding its replicas in order
      return tf.data.Dataset.from_tensor_slices((inputs, labels)).repeat()
  else:
    def dataset_fn(context):
      del context
      return source.make_dataset()
  if coordinator is not None:
    return iter(coordinator.create_per_worker_dataset(
        lambda: strategy.distribute_datasets_from_function(dataset_fn)))
  return iter(strategy.distribute_datasets_from_function(dataset_fn))


def input_spec(rc, with_labels=False):
  """The TensorSpec of one replica's inputs (to build the model once), and
  of its labels with ``with_labels`` (a pair then)."""
  batch = rc.batch_size_per_device
  if rc.model.reads_ids:
    spec = tf.TensorSpec([batch, len(rc.model.id_vocab_sizes)], tf.int32)
  else:
    size = rc.model.image_size
    height, width = (size, size) if isinstance(size, int) else size
    spec = tf.TensorSpec([batch, height, width, 3], tf.float32)
  if with_labels:
    return spec, tf.TensorSpec([batch], tf.int32)
  return spec
