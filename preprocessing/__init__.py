"""Input pipelines: synthetic data, ImageNet TFRecords, CIFAR-10 batches.

The driver calls `get_input_source(...)` before building its graph, then
`source.tower_batches(devices)` inside it, runs `source.initializers()`
after variable initialisation, and passes any exception from
`Session.run` to `explain_data_error`, which returns a DataError (naming
the file and record) when the failure was bad input data, else None.
"""

import os

from preprocessing.errors import DataError, explain_data_error
from preprocessing.errors import may_need_locating
from preprocessing.diagnosis import RESCAN_SECONDS

DATA_NAMES = ('imagenet', 'cifar10')

__all__ = ['DataError', 'explain_data_error', 'may_need_locating', 'get_input_source',
           'DATA_NAMES', 'RESCAN_SECONDS']


def holds_cifar10(data_dir):
  """Does ``data_dir`` hold CIFAR-10's python batches?"""
  return bool(data_dir) and os.path.isfile(os.path.join(data_dir,
                                                        'data_batch_1'))


def _data_name(params):
  """--data_name, or (unset) cifar10 when data_dir holds CIFAR batches."""
  name = getattr(params, 'data_name', None)
  if name:
    return name
  return 'cifar10' if holds_cifar10(getattr(params, 'data_dir', None)) \
      else 'imagenet'


def get_input_source(params, image_size, num_classes, batch_size_per_tower,
                     num_towers, subset, data_name=None, first_tower=0,
                     id_vocab_sizes=None):
  """The InputSource for this run.

  Args:
    params: has the original's flag names as attributes (data_dir,
      data_name, distortions, resize_method, fuse_decode_and_crop,
      datasets_*, tf_random_seed); missing ones take the original defaults.
    image_size: the model's input size (int, or (height, width)).
    num_classes: the model's number of classes (1001 for ImageNet heads).
    batch_size_per_tower: images per tower per step.
    num_towers: towers fed per step (each gets its own batch).
    subset: 'train' or 'validation'.
    data_name: 'imagenet' or 'cifar10'; None: params.data_name, else
      cifar10 when data_dir holds CIFAR batches, else imagenet.
    first_tower: this process's first tower among all of a cluster's
      (synthetic data gives every tower its own images).
    id_vocab_sizes: for a model that reads integer ids instead of images
      (ncf), the number of distinct ids of each column; such models have
      synthetic data only (a data_dir is a ValueError).

  Synthetic when params.data_dir is unset; otherwise ImageNet shards or
  CIFAR-10 batches per params.data_name. Raises DataError when the data
  cannot be found (checked here, before any graph is built).
  """
  name = data_name or _data_name(params)
  if name not in DATA_NAMES:
    raise ValueError('--data_name=%r is not one of: %s'
                     % (name, ', '.join(DATA_NAMES)))
  if id_vocab_sizes:
    if getattr(params, 'data_dir', None):
      raise ValueError('a model that reads ids has synthetic data only; '
                       'data_dir=%r cannot feed it' % params.data_dir)
    from preprocessing import synthetic
    return synthetic.SyntheticIds(id_vocab_sizes, num_classes,
                                  batch_size_per_tower, name, subset,
                                  first_tower=first_tower)
  if not getattr(params, 'data_dir', None):
    from preprocessing import synthetic
    return synthetic.SyntheticInput(image_size, num_classes,
                                    batch_size_per_tower, name, subset,
                                    first_tower=first_tower)
  if name == 'cifar10':
    from preprocessing import cifar
    return cifar.CifarInput(params, image_size, num_classes,
                            batch_size_per_tower, subset)
  from preprocessing import imagenet
  return imagenet.ImageNetInput(params, image_size, num_classes,
                                batch_size_per_tower, subset)
