"""The original's input flags, each changing what it should in the pipeline."""

import os
import sys
import types

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import dataset_options_pb2

from preprocessing import get_input_source
from tests.preprocessing.conftest import NUM_CLASSES, make_params, run_batches

tf1 = tf.compat.v1

HEADS = NUM_CLASSES + 1
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def source(data_dir, subset='train', size=32, batch=4, **flags):
  return get_input_source(make_params(data_dir, **flags), size, HEADS, batch,
                          1, subset)


def dataset_graph(src):
  """The GraphDef of src's dataset, built in a graph of its own."""
  graph = tf.Graph()
  with graph.as_default():
    src.make_dataset()
  return graph.as_graph_def()


# The original's interleave: a thread per shard in the cycle
# (dataset_options.interleave says why).
INTERLEAVE = 'LegacyParallelInterleaveDatasetV2'


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
  (interleave,) = nodes(graph_def, INTERLEAVE)
  assert interleave.attr['deterministic'].s == deterministic


@pytest.mark.timeout(120)
def test_parallel_interleave_prefetch_sets_the_files_opened_ahead(shards_dir):
  # The interleave's inputs: dataset, cycle_length, block_length,
  # buffer_output_elements, prefetch_input_elements.
  graph_def = dataset_graph(source(
      shards_dir, datasets_parallel_interleave_prefetch=3))
  (interleave,) = nodes(graph_def, INTERLEAVE)
  assert const_input(graph_def, interleave, 4) == 3
  default_def = dataset_graph(source(shards_dir))
  (default,) = nodes(default_def, INTERLEAVE)
  # Twice the cycle (the shards here, fewer than 10) by default.
  assert const_input(default_def, default, 4) == 2 * const_input(
      default_def, default, 1)
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


@pytest.mark.timeout(120)
def test_round_robin_cycles_the_resize_methods_over_the_batch(shards_dir):
  # Eval preprocessing is deterministic, so each image can be compared with
  # the same image resized by one method.
  def images(method):
    _, outputs = run_batches(source(shards_dir, 'validation', size=24,
                                    resize_method=method), 1)
    return outputs[0][0][0]

  by_method = {m: images(m) for m in ('bilinear', 'nearest', 'bicubic',
                                      'area')}
  mixed = images('round_robin')
  for position, method in enumerate(by_method):
    np.testing.assert_allclose(mixed[position], by_method[method][position],
                               atol=1e-6)
    others = [m for m in by_method if m != method]
    assert not any(np.allclose(mixed[position], by_method[m][position])
                   for m in others)


def function_ops(graph_def):
  """Op types in the graph's functions (a dataset's map functions)."""
  return {node.op for f in graph_def.library.function for node in f.node_def}


def function_node_names(graph_def):
  return [node.name for f in graph_def.library.function
          for node in f.node_def]


@pytest.mark.parametrize('in_yiq', [True, False])
def test_distort_color_in_yiq_picks_the_colour_space(shards_dir, in_yiq):
  graph_def = dataset_graph(source(shards_dir, distortions=True,
                                   distort_color_in_yiq=in_yiq))
  in_hsv = {'AdjustHue', 'AdjustSaturation'} & function_ops(graph_def)
  in_yiq_space = [n for n in function_node_names(graph_def)
                  if 'hue_saturation_in_yiq' in n]
  assert bool(in_yiq_space) == in_yiq
  assert bool(in_hsv) == (not in_yiq)


@pytest.mark.timeout(120)
def test_yiq_distortion_keeps_luma_and_moves_chroma(shards_dir):
  from preprocessing import image_ops
  rgb = np.random.RandomState(0).uniform(0.2, 0.8, (8, 8, 3)).astype(
      np.float32)
  graph = tf.Graph()
  with graph.as_default():
    tf1.set_random_seed(1)
    image = tf.constant(rgb)
    yiq_out = tf.image.rgb_to_yiq(
        image_ops.random_hue_saturation_in_yiq(image))
    hsv_out = tf.image.rgb_to_yiq(tf.image.random_hue(
        tf.image.random_saturation(image, 0.5, 1.5), 0.2))
    with tf1.Session() as sess:
      yiq, hsv = sess.run([yiq_out, hsv_out])
  original = tf.image.rgb_to_yiq(rgb).numpy()
  np.testing.assert_allclose(yiq[..., 0], original[..., 0], atol=1e-5)
  assert not np.allclose(yiq[..., 1:], original[..., 1:], atol=1e-3)
  assert not np.allclose(hsv[..., 0], original[..., 0], atol=1e-3)
  # Through the pipeline: distorted training batches in both spaces.
  for in_yiq in (True, False):
    _, outputs = run_batches(source(shards_dir, distortions=True,
                                    distort_color_in_yiq=in_yiq), 2)
    for ((images, _),) in outputs:
      assert images.min() >= -1.0 and images.max() <= 1.0


@pytest.mark.timeout(120)
@pytest.mark.parametrize('data', ['imagenet', 'cifar10'])
def test_multi_device_iterator_buffer_size_is_in_the_graph(
    shards_dir, cifar_dir, data):
  def build(**flags):
    if data == 'cifar10':
      src = get_input_source(make_params(cifar_dir, data_name='cifar10',
                                         **flags), 32, 10, 2, 2, 'train')
    else:
      src = source(shards_dir, size=24, batch=2, **flags)
    pairs, outputs = run_batches(src, 2, devices=('/cpu:0', '/cpu:1'))
    for i, (images, _) in enumerate(pairs):
      assert images.device.endswith('CPU:%d' % i)
    assert all(len(step) == 2 for step in outputs)
    return images.graph.as_graph_def()

  graph_def = build(multi_device_iterator_max_buffer_size=3)
  (init,) = nodes(graph_def, 'MultiDeviceIteratorInit')
  assert const_input(graph_def, init, 2) == 3  # dataset, iterator, size
  # Without --datasets_use_prefetch (as the original): one host iterator.
  graph_def = build(datasets_use_prefetch=False,
                    multi_device_iterator_max_buffer_size=3)
  assert not nodes(graph_def, 'MultiDeviceIterator')


@pytest.mark.timeout(120)
def test_one_tower_on_the_host_cpu_reads_a_plain_iterator(shards_dir):
  # Nothing to deal out and no device to prefetch onto: a multi-device
  # iterator would only add a thread (the dataset prefetches anyway).
  pairs, outputs = run_batches(source(shards_dir, size=24, batch=2), 2)
  graph_def = pairs[0][0].graph.as_graph_def()
  assert not nodes(graph_def, 'MultiDeviceIterator')
  assert nodes(graph_def, 'IteratorV2') and nodes(graph_def, 'PrefetchDataset')
  assert len(outputs) == 2


@pytest.mark.parametrize('data', ['imagenet', 'cifar10'])
def test_a_batch_per_tower_is_preprocessed_at_once(shards_dir, cifar_dir,
                                                   data):
  # As the original's map_and_batch; tf.data's AUTOTUNE kept fewer images
  # in flight and left the CPU idle beside the model (dataset_options).
  def parallel_calls(**flags):
    if data == 'cifar10':
      src = get_input_source(make_params(cifar_dir, data_name='cifar10',
                                         **flags), 32, 10, 3, 1, 'train')
    else:
      src = source(shards_dir, batch=3, **flags)
    graph_def = dataset_graph(src)
    (node,) = nodes(graph_def, 'ParallelMapDatasetV2')
    return const_input(graph_def, node, len(node.input) - 1)
  assert parallel_calls() == 3
  assert parallel_calls(num_gpus=2) == 6


@pytest.mark.parametrize('data', ['imagenet', 'cifar10'])
def test_the_pipelines_run_without_the_autotuner(shards_dir, cifar_dir,
                                                 data):
  # Every buffer and parallelism is set, so its model of the pipeline only
  # cost CPU per image (dataset_options.finish).
  if data == 'cifar10':
    src = get_input_source(make_params(cifar_dir, data_name='cifar10'), 32,
                           10, 3, 1, 'train')
  else:
    src = source(shards_dir, batch=3)
  graph_def = dataset_graph(src)
  (node,) = nodes(graph_def, 'OptionsDataset')
  options = dataset_options_pb2.Options.FromString(
      node.attr['serialized_options'].s)
  assert options.autotune_options.HasField('enabled')
  assert options.autotune_options.enabled is False


def test_input_benchmarks_autotuned_pipeline_is_the_old_arrangement(
    shards_dir):
  # benchmarks/input_pipeline.py --pipeline=fast,autotuned measures the
  # interleave and autotuner fix (PERFORMANCE.md): only if "autotuned"
  # really reads the old way, beside the new.
  sys.path.insert(0, os.path.join(REPO, 'benchmarks'))
  try:
    import input_pipeline  # pylint: disable=g-import-not-at-top
  finally:
    sys.path.pop(0)
  args = types.SimpleNamespace(image_size=32, batch_size=4, subset='train')
  def graph_of(name):
    return dataset_graph(input_pipeline.make_source(
        name, make_params(shards_dir), args))
  fast, old = graph_of('fast'), graph_of('autotuned')
  assert nodes(fast, INTERLEAVE) and not nodes(fast,
                                               'ParallelInterleaveDatasetV4')
  assert nodes(old, 'ParallelInterleaveDatasetV4') and not nodes(
      old, INTERLEAVE)
  (options,) = nodes(old, 'OptionsDataset')
  assert dataset_options_pb2.Options.FromString(
      options.attr['serialized_options'].s).autotune_options.enabled
