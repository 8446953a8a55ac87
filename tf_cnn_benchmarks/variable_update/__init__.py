"""Variable managers, one module per --variable_update mode."""

from tf_cnn_benchmarks.variable_update.independent import IndependentManager
from tf_cnn_benchmarks.variable_update.parameter_server import (
    ParameterServerManager)
from tf_cnn_benchmarks.variable_update.replicated import ReplicatedManager

_MANAGERS = {m.name: m for m in (ParameterServerManager, ReplicatedManager,
                                 IndependentManager)}


def make_variable_manager(run_config):
  mode = run_config.params.variable_update
  if mode not in _MANAGERS:
    raise ValueError('variable_update=%s needs a cluster' % mode)
  return _MANAGERS[mode](run_config)
