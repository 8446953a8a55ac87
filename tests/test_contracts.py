"""Each part implements the contract contracts.py declares for it: every
method the protocol names, with the protocol's parameters in its order.

The implementations do not inherit the protocols (they are structural), so
nothing but this test notices a method renamed on one runtime only.
"""

import inspect
from typing import Protocol

import pytest

from tf_cnn_benchmarks import contracts

# Protocol -> 'module:Class' of every implementation.
IMPLEMENTATIONS = {
    contracts.Engine: ['tf_cnn_benchmarks.engine_graph.engine:GraphEngine',
                       'tf_cnn_benchmarks.engine_tf2.engine:Tf2Engine'],
    contracts.SessionRuntime: [
        'tf_cnn_benchmarks.run.local_runtime:LocalRuntime',
        'tf_cnn_benchmarks.cluster.task.runtime:ClusterRuntime'],
    contracts.FunctionRuntime: [
        'tf_cnn_benchmarks.run.local_runtime:LocalRuntime',
        'tf_cnn_benchmarks.cluster.task.tf2_runtime:Tf2ClusterRuntime'],
    contracts.StepRunner: [
        'tf_cnn_benchmarks.engine_graph.batch_group:SessionStepRunner',
        'tf_cnn_benchmarks.engine_tf2.train_step:FunctionStepRunner'],
    contracts.StepExtras: [
        'tf_cnn_benchmarks.engine_graph.step_extras:GraphExtras',
        'tf_cnn_benchmarks.run.step_loop:NoExtras'],
}


def _load(path):
  module, name = path.split(':')
  return getattr(__import__(module, fromlist=[name]), name)


def _members(protocol):
  """(methods, attributes) a protocol declares, its base protocols' too."""
  methods, attributes = {}, set()
  for cls in protocol.__mro__:
    if not getattr(cls, '_is_protocol', False) or cls is Protocol:
      continue
    methods.update({name: value for name, value in vars(cls).items()
                    if inspect.isfunction(value) and not name.startswith('_')
                    and name not in methods})
    attributes |= set(vars(cls).get('__annotations__', {}))
  return methods, attributes - set(methods)


def mismatches(protocol, cls):
  methods, attributes = _members(protocol)
  found = []
  for name, declared in methods.items():
    own = getattr(cls, name, None)
    if not callable(own):
      found.append('%s has no %s()' % (cls.__name__, name))
      continue
    want = list(inspect.signature(declared).parameters)
    have = list(inspect.signature(own).parameters)
    if have[:len(want)] != want:
      found.append('%s.%s%s, the contract says %s' % (
          cls.__name__, name, tuple(have), tuple(want)))
  for name in attributes:
    if not hasattr(cls, name) and name not in getattr(
        cls.__init__, '__code__', None).co_names:
      found.append('%s has no attribute %s' % (cls.__name__, name))
  return found


@pytest.mark.parametrize('protocol,path', [
    (p, path) for p, paths in IMPLEMENTATIONS.items() for path in paths])
def test_every_implementation_keeps_its_contract(protocol, path):
  assert mismatches(protocol, _load(path)) == []


def test_the_check_sees_a_missing_method_and_a_changed_signature():
  class Broken:
    is_chief = True

    def begin(self, rc):  # run_watch dropped
      return rc
  found = mismatches(contracts.SessionRuntime, Broken)
  assert any('Broken.begin' in f for f in found), found
  assert any('has no running()' in f for f in found), found
