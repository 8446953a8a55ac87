"""Helpers shared by the zoo's parameter-count and shape tests."""

import functools

import numpy as np

import tensorflow as tf

from tests.models import inspect_model
from models import registry

tf1 = tf.compat.v1


def head_difference(num_classes, features, published_classes=1000):
  """Extra classifier parameters of our head over a published one.

  One weight per feature plus one bias for each extra class (our ImageNet
  heads have 1001 outputs; most published counts are for 1000).
  """
  return (num_classes - published_classes) * (features + 1)


@functools.lru_cache(maxsize=None)
def built_tower(name, data_format):
  """(graph, ModelOutput) of a 2-image training tower of an ImageNet model.

  Built once per (name, data_format) per test run: graph building is the
  slow part of these tests. Pass arguments positionally so the cache sees
  one key per build.
  """
  graph, _, out = inspect_model.build_single_tower(
      registry.get_model(name), batch_size=2, data_format=data_format)
  return graph, out


def parameter_counts(graph):
  """(trainable, all) scalars of the variables in graph."""
  with graph.as_default():
    trainable = sum(v.shape.num_elements() for v in tf1.trainable_variables())
    total = sum(v.shape.num_elements() for v in tf1.global_variables())
  return trainable, total


@functools.lru_cache(maxsize=None)
def _trainable_shapes(name, dataset, data_format):
  spec = registry.get_model(name, dataset)
  graph, _, out = inspect_model.build_single_tower(spec, batch_size=2,
                                                   data_format=data_format)
  with graph.as_default():
    variables = {v.op.name: v.shape.as_list()
                 for v in tf1.trainable_variables()}
  return variables, out.logits.shape.as_list()


def trainable_shapes(name, dataset, data_format='NHWC'):
  """({variable name: shape}, logits shape) of one 2-image training tower.

  Cached (one key per model and layout, however the caller passes them) so
  count and shape tests build each graph once.
  """
  return _trainable_shapes(name, dataset, data_format)


def trainable_count(name, dataset, data_format='NHWC'):
  variables, _ = trainable_shapes(name, dataset, data_format)
  return sum(int(np.prod(shape)) for shape in variables.values())
