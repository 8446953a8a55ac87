"""Every registered model trains two steps through the real driver.

This is the zoo's smoke test: registry entry, builder, variable manager,
loss, gradients and update all have to work for each model (the original
registered models that crashed before their first step).
"""

import dataclasses
import functools
import math

import pytest

from models import densenet
from models import registry
from models import resnet
from tests.driver_helpers import run_quietly
from tests.models import test_every_model_learns as learns


def split_depth(config):
  """(the configuration with its depth taken out, the depth) of a builder's
  argument: a ResNet's blocks per stage, a DenseNet's layers per dense
  block, a VGG's convolutions per stage (0 for any other argument). What
  is left (widths, strides, bottlenecks, pre-activation, shortcuts, the
  stem) picks the code the network runs."""
  if isinstance(config, resnet.ResNetConfig):
    return (dataclasses.replace(config, stages=tuple(
        dataclasses.replace(stage, blocks=0) for stage in config.stages)),
            sum(stage.blocks for stage in config.stages))
  if isinstance(config, densenet.DenseNetConfig):
    return (dataclasses.replace(config, block_layers=len(config.block_layers)),
            sum(config.block_layers))
  if isinstance(config, list):  # VGG: the widths of each stage's convolutions
    return ([sorted(set(stage)) for stage in config],
            sum(len(stage) for stage in config))
  return config, 0


def code_key(spec):
  """What code a spec runs: names with the same key build the same network
  (aliases) or the same network at another depth (split_depth)."""
  build = spec.build
  if isinstance(build, functools.partial):
    build = (build.func, tuple(split_depth(a)[0] for a in build.args),
             tuple(sorted(build.keywords.items())))
  return spec.dataset, spec.image_size, build


def depth(spec):
  """Layers (blocks) the spec's configuration stacks; 0 when it has none."""
  return sum(split_depth(a)[1] for a in getattr(spec.build, 'args', ()))


def learnt_networks():
  """The code keys of the networks models/test_every_model_learns.py
  trains."""
  return [code_key(registry.get_model(model, dataset))
          for _, model, dataset, _ in learns.FAMILIES]


# Networks whose code is another's at a larger size, which that other's
# training runs (one_spec_per_network says why).
LARGER_TWINS = ('nasnetlarge',)


def one_spec_per_network():
  """Aliases (mobilenet_v2) and the original's second names for a network
  (official_resnet50 is resnet50_v1.5) would only train the same graph
  again: the first name stands for all of them. A deeper network of the
  same code (resnet152 beside resnet50, densenet201 beside densenet121)
  trains the same ops, more of them, at up to 25 s each here: the
  shallowest stands for its family (every depth is built, and its
  parameters counted against the published figures, by its family's
  tests in tests/models/). So would the networks
  models/test_every_model_learns.py trains, in both engines and for more
  steps (builder, variables, loss, gradients and update; the driver's loop
  around them is the same for every model): they and their deeper twins
  are left to it. NASNet-A Large (LARGER_TWINS) is NASNet-A Mobile's
  cells, more and wider, at 331 px: 102 s here for two steps that run no
  op Mobile's do not; its one other wiring (skip_reduction_input) is
  built, and its parameters counted, in tests/models/test_nasnet.py."""
  learnt = learnt_networks()
  chosen = []  # compared with ==: some configurations hold lists
  for spec in sorted(registry.all_specs(), key=depth):
    key = code_key(spec)
    if (key not in learnt and spec.name not in LARGER_TWINS and
        all(key != code_key(c) for c in chosen)):
      chosen.append(spec)
  return chosen


SPECS = one_spec_per_network()


@pytest.mark.slow
@pytest.mark.parametrize('spec', SPECS,
                         ids=['%s-%s' % (s.dataset, s.name) for s in SPECS])
def test_model_trains_two_steps(spec):
  result, text = run_quietly(model=spec.name, data_name=spec.dataset,
                             batch_size=2, num_batches=2,
                             num_warmup_batches=0)
  assert result.status == 'ok', result.failure
  assert len(result.times.losses) == 2
  assert all(math.isfinite(loss) for loss in result.times.losses)
  assert 'Model:       %s' % spec.name in text


def test_every_required_model_is_registered():
  imagenet = {'trivial', 'lenet', 'alexnet', 'overfeat', 'googlenet',
              'inception3', 'inception4', 'vgg11', 'vgg16', 'vgg19',
              'resnet50', 'resnet101', 'resnet152', 'resnet50_v1.5',
              'resnet50_v2', 'resnet101_v2', 'resnet152_v2', 'mobilenet',
              'mobilenet_v1',
              'mobilenet_v2', 'densenet121', 'densenet169', 'densenet201',
              'nasnet', 'nasnetlarge', 'ncf'}
  for depth in (18, 34, 50, 101, 152, 200):
    imagenet |= {'official_resnet%d' % depth, 'official_resnet%d_v2' % depth}
  cifar = {'trivial', 'alexnet', 'densenet40_k12', 'densenet100_k12',
           'densenet100_k24'}
  for depth in (20, 32, 44, 56, 110):
    cifar |= {'resnet%d' % depth, 'resnet%d_v2' % depth}
  assert imagenet <= set(registry.model_names(registry.IMAGENET))
  assert cifar <= set(registry.model_names(registry.CIFAR10))


def test_image_sizes_and_default_batches_follow_the_original():
  expect = {('imagenet', 'trivial'): (227, 32), ('imagenet', 'alexnet'):
            (227, 512), ('imagenet', 'lenet'): (28, 32),
            ('imagenet', 'overfeat'): (231, 32),
            ('imagenet', 'inception3'): (299, 32),
            ('imagenet', 'vgg16'): (224, 64),
            ('imagenet', 'resnet50'): (224, 64),
            ('imagenet', 'nasnetlarge'): (331, 16),
            ('cifar10', 'resnet56'): (32, 128)}
  for (dataset, name), (size, batch) in expect.items():
    spec = registry.get_model(name, dataset)
    assert (spec.image_size, spec.default_batch_size) == (size, batch), name


def test_unknown_model_names_the_valid_ones():
  with pytest.raises(registry.UnknownModelError) as e:
    registry.get_model('resnet57', registry.CIFAR10)
  assert 'resnet56' in str(e.value)
  with pytest.raises(registry.UnknownModelError) as e:
    registry.get_model('resnet56', registry.IMAGENET)
  assert 'pass --data_name=cifar10' in str(e.value)


def test_duplicate_registration_is_refused():
  spec = registry.get_model('trivial')
  with pytest.raises(ValueError, match='already registered'):
    registry.register(spec)


# Every name the original's model_config.py registered for these datasets
# (mobilenet, nasnet and nasnetlarge through its TF1-only registrations).
ORIGINAL_NAMES = {
    registry.IMAGENET: (
        ['vgg11', 'vgg16', 'vgg19', 'lenet', 'googlenet', 'overfeat',
         'alexnet', 'trivial', 'inception3', 'inception4', 'resnet50',
         'resnet50_v1.5', 'resnet50_v2', 'resnet101', 'resnet101_v2',
         'resnet152', 'resnet152_v2', 'ncf', 'mobilenet', 'nasnet',
         'nasnetlarge'] +
        ['official_resnet%d%s' % (d, s) for d in (18, 34, 50, 101, 152, 200)
         for s in ('', '_v2')]),
    registry.CIFAR10: (
        ['alexnet', 'trivial', 'densenet40_k12', 'densenet100_k12',
         'densenet100_k24', 'nasnet'] +
        ['resnet%d%s' % (d, s) for d in (20, 32, 44, 56, 110)
         for s in ('', '_v2')]),
}


@pytest.mark.parametrize('dataset', registry.DATASETS)
def test_every_original_name_is_built_or_says_why_not(dataset):
  for name in ORIGINAL_NAMES[dataset]:
    if name in registry.model_names(dataset):
      continue
    reason = registry.not_provided_reason(name, dataset)
    assert reason and 'not provided' in reason, (dataset, name)
    with pytest.raises(registry.ModelNotProvidedError):
      registry.get_model(name, dataset)


def test_only_the_same_code_shares_a_training_run():
  """Every registered network, or a shallower one of its code, trains here
  or in test_every_model_learns; only another name or depth of one network
  is left out, and the shallowest depth is the one trained."""
  trained = learnt_networks() + [code_key(s) for s in SPECS]
  assert all(code_key(s) in trained for s in registry.all_specs()
             if s.name not in LARGER_TWINS)
  assert LARGER_TWINS == ('nasnetlarge',)  # Mobile's cells: learnt there
  assert code_key(registry.get_model('nasnet')) in learnt_networks()
  names = {s.name for s in SPECS if s.dataset == registry.IMAGENET}
  assert {'resnet50', 'official_resnet50', 'official_resnet50_v2',
          'official_resnet18_v2', 'densenet121'} <= names
  assert 'nasnetlarge' not in names
  # Deeper twins, and twins of the networks learnt there, are left out.
  assert not {'resnet152', 'official_resnet200_v2', 'official_resnet34',
              'densenet201', 'vgg19', 'mobilenet', 'official_resnet18'} & names
  cifar = {s.name for s in SPECS if s.dataset == registry.CIFAR10}
  assert cifar == {'densenet100_k24'}  # its growth rate is its own
  # Pre-activation, a bottleneck, a projection shortcut: each its own code.
  for twin in ('official_resnet50', 'official_resnet50_v2'):
    assert code_key(registry.get_model('resnet50')) != \
        code_key(registry.get_model(twin))
  # One of each pair of names for one network.
  assert len({'official_resnet50', 'resnet50_v1.5'} & names) == 1
  assert len({'official_resnet50_v2', 'resnet50_v2'} & names) == 1
