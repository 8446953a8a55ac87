"""The model zoo's registry: a name (per dataset) maps to a ModelSpec.

Model modules register their networks at import time with ``register``;
``get_model`` is the only lookup the rest of the harness uses. A name may
exist for several datasets (``alexnet`` and ``trivial`` have ImageNet and
CIFAR-10 forms), so lookups take the dataset too.
"""

import dataclasses
import importlib
from typing import Callable, Dict, Optional, Tuple

IMAGENET = 'imagenet'
CIFAR10 = 'cifar10'
DATASETS = (IMAGENET, CIFAR10)

# TF-style ImageNet heads have 1001 outputs: label 0 is "background", real
# labels are 1..1000 (the ImageNet TFRecords use that numbering).
NUM_CLASSES = {IMAGENET: 1001, CIFAR10: 10}

# What a model reads (ModelSpec.inputs): images, or integer ids (ncf's user
# and item ids), which no real-data pipeline here produces.
IMAGES, IDS = 'images', 'ids'

# Modules that define models; importing them fills the registry.
_MODEL_MODULES = (
    'models.trivial', 'models.lenet', 'models.alexnet', 'models.overfeat',
    'models.googlenet', 'models.inception', 'models.vgg', 'models.resnet',
    'models.mobilenet', 'models.densenet', 'models.nasnet', 'models.ncf',
)


@dataclasses.dataclass(frozen=True)
class ModelOutput:
  """What a model's build function returns.

  logits: [batch, num_classes] in the compute dtype.
  aux_logits: optional auxiliary head (inception); the driver adds its loss
    with weight ``aux_loss_weight`` in training.
  """
  logits: object
  aux_logits: Optional[object] = None
  aux_loss_weight: float = 0.4


@dataclasses.dataclass(frozen=True)
class ModelSpec:
  """A network and the defaults the original tool used for it.

  build: ``build(builder, images, num_classes) -> ModelOutput``, where images
    are already in the builder's data_format and compute dtype; for a model
    whose ``inputs`` are IDS, ``images`` is an int32 [batch, columns] tensor
    of ids instead (column i below ``id_vocab_sizes[i]``).
  """
  name: str
  dataset: str
  image_size: int
  default_batch_size: int
  default_learning_rate: float
  build: Callable
  # Notes on the source of the architecture; shown in --help listings.
  description: str = ''
  # IMAGES, or IDS: integer id columns (synthetic only), one per entry of
  # id_vocab_sizes, the number of distinct ids of that column.
  inputs: str = IMAGES
  id_vocab_sizes: Tuple[int, ...] = ()
  # Classes of the labels when they are not the dataset's (ncf: 2, the
  # user interacted with the item or not).
  label_classes: Optional[int] = None

  @property
  def num_classes(self):
    return self.label_classes or NUM_CLASSES[self.dataset]

  @property
  def reads_ids(self):
    return self.inputs == IDS


_REGISTRY: Dict[Tuple[str, str], ModelSpec] = {}
_loaded = False


class UnknownModelError(ValueError):
  """Raised for a model name that is not registered for a dataset."""


class ModelNotProvidedError(ValueError):
  """Raised for a name the original tool registered that is not built here.

  Its message says why and what to use instead: "unknown model" would
  wrongly suggest a typo to someone who pasted a working original command.
  """


# (name, dataset or None for every dataset) -> why not, and what instead.
NOT_PROVIDED = {
    ('nasnet', CIFAR10): (
        "--model=nasnet with --data_name=cifar10 is not provided: the "
        "original's CIFAR-10 NASNet-A (6@768) is not built here. nasnet and "
        "nasnetlarge exist for imagenet (--data_name=imagenet)."),
}


def register(spec: ModelSpec) -> ModelSpec:
  if spec.dataset not in DATASETS:
    raise ValueError('unknown dataset %r for model %r' % (spec.dataset,
                                                         spec.name))
  key = (spec.dataset, spec.name)
  if key in _REGISTRY:
    raise ValueError('model %r is already registered for %s' % key[::-1])
  _REGISTRY[key] = spec
  return spec


def _load_all():
  global _loaded
  if not _loaded:
    _loaded = True
    for module in _MODEL_MODULES:
      importlib.import_module(module)


def model_names(dataset=None):
  """Sorted names registered for ``dataset`` (all datasets if None)."""
  _load_all()
  return sorted({n for (d, n) in _REGISTRY if dataset in (None, d)})


def not_provided_reason(name: str, dataset: str) -> Optional[str]:
  """Why the original's ``name`` is not built here for ``dataset``, or None."""
  return NOT_PROVIDED.get((name, dataset), NOT_PROVIDED.get((name, None)))


def get_model(name: str, dataset: str = IMAGENET) -> ModelSpec:
  _load_all()
  spec = _REGISTRY.get((dataset, name))
  reason = not_provided_reason(name, dataset)
  if spec is None and reason:
    raise ModelNotProvidedError(reason)
  if spec is None:
    other = [d for d in DATASETS if (d, name) in _REGISTRY]
    hint = (' It exists for %s; pass --data_name=%s.' % (other[0], other[0])
            if other else '')
    raise UnknownModelError(
        'Unknown model %r for dataset %s.%s Valid models for %s: %s.' % (
            name, dataset, hint, dataset, ', '.join(model_names(dataset))))
  return spec


def all_specs():
  _load_all()
  return [_REGISTRY[k] for k in sorted(_REGISTRY)]
