"""The original's input flags, each changing what it should in the pipeline."""

import numpy as np
import pytest
import tensorflow as tf

from preprocessing import get_input_source
from tests.preprocessing.conftest import NUM_CLASSES, make_params, run_batches

tf1 = tf.compat.v1

HEADS = NUM_CLASSES + 1


def source(data_dir, subset='train', size=32, batch=4, **flags):
  return get_input_source(make_params(data_dir, **flags), size, HEADS, batch,
                          1, subset)


def dataset_graph(src):
  """The GraphDef of src's dataset, built in a graph of its own."""
  graph = tf.Graph()
  with graph.as_default():
    src.make_dataset()
  return graph.as_graph_def()


def nodes(graph_def, op):
  return [n for n in graph_def.node if n.op == op]


def const_input(graph_def, node, position):
  """The value of the constant feeding input `position` of node."""
  name = node.input[position].split(':')[0]
  const = next(n for n in graph_def.node if n.name == name)
  return tf.make_ndarray(const.attr['value'].tensor)


@pytest.mark.parametrize('subset, sloppy, deterministic', [
    ('train', False, b'true'),
    ('train', True, b'false'),
    # Eval reads in a fixed order whatever the flag says.
    ('validation', True, b'true'),
])
def test_sloppy_interleave_sets_the_interleaves_determinism(
    shards_dir, subset, sloppy, deterministic):
  graph_def = dataset_graph(source(
      shards_dir, subset, datasets_sloppy_parallel_interleave=sloppy))
  (interleave,) = nodes(graph_def, 'ParallelInterleaveDatasetV4')
  assert interleave.attr['deterministic'].s == deterministic


@pytest.mark.timeout(120)
def test_parallel_interleave_prefetch_sets_the_files_opened_ahead(shards_dir):
  # ParallelInterleaveDatasetV4's inputs: dataset, cycle_length,
  # block_length, buffer_output_elements, prefetch_input_elements, ...
  graph_def = dataset_graph(source(
      shards_dir, datasets_parallel_interleave_prefetch=3))
  (interleave,) = nodes(graph_def, 'ParallelInterleaveDatasetV4')
  assert const_input(graph_def, interleave, 4) == 3
  default_def = dataset_graph(source(shards_dir))
  assert const_input(default_def, nodes(
      default_def, 'ParallelInterleaveDatasetV4')[0], 4) == -1  # AUTOTUNE
  # And the pipeline still reads every shard.
  _, outputs = run_batches(source(
      shards_dir, datasets_parallel_interleave_prefetch=1), 7)
  labels = np.concatenate([out[0][1] for out in outputs])
  assert set(labels) == {1, 2, 3}


@pytest.mark.timeout(120)
def test_repeat_cached_sample_serves_one_record_still_preprocessed(
    shards_dir):
  _, outputs = run_batches(source(shards_dir), 3)
  assert len(set(np.concatenate([o[0][1] for o in outputs]))) > 1
  _, outputs = run_batches(
      source(shards_dir, datasets_repeat_cached_sample=True), 3)
  labels = np.concatenate([o[0][1] for o in outputs])
  assert len(set(labels)) == 1
  # One record, but each copy gets its own random crop and flip.
  images = np.concatenate([o[0][0] for o in outputs])
  assert not np.allclose(images[0], images[1])
  # Eval preprocessing is deterministic: the same image every time.
  _, outputs = run_batches(source(shards_dir, 'validation',
                                  datasets_repeat_cached_sample=True), 2)
  images = np.concatenate([o[0][0] for o in outputs])
  assert all(np.array_equal(images[0], image) for image in images[1:])


@pytest.mark.timeout(120)
def test_repeat_cached_sample_on_cifar(cifar_dir):
  src = get_input_source(
      make_params(cifar_dir, data_name='cifar10',
                  datasets_repeat_cached_sample=True), 32, 10, 4, 1,
      'validation')
  _, outputs = run_batches(src, 2)
  images = np.concatenate([o[0][0] for o in outputs])
  labels = np.concatenate([o[0][1] for o in outputs])
  assert len(set(labels)) == 1
  assert all(np.array_equal(images[0], image) for image in images[1:])
