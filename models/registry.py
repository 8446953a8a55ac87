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

# Modules that define models; importing them fills the registry.
_MODEL_MODULES = (
    'models.trivial', 'models.lenet', 'models.alexnet', 'models.overfeat',
    'models.googlenet', 'models.inception', 'models.vgg', 'models.resnet',
    'models.mobilenet', 'models.densenet', 'models.nasnet',
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
    are already in the builder's data_format and compute dtype.
  """
  name: str
  dataset: str
  image_size: int
  default_batch_size: int
  default_learning_rate: float
  build: Callable
  # Notes on the source of the architecture; shown in --help listings.
  description: str = ''

  @property
  def num_classes(self):
    return NUM_CLASSES[self.dataset]


_REGISTRY: Dict[Tuple[str, str], ModelSpec] = {}
_loaded = False


class UnknownModelError(ValueError):
  """Raised for a model name that is not registered for a dataset."""


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


def get_model(name: str, dataset: str = IMAGENET) -> ModelSpec:
  _load_all()
  spec = _REGISTRY.get((dataset, name))
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
