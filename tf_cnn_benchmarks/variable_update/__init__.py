"""Variable managers, one module per --variable_update mode.

``make_variable_manager`` imports only the manager the run needs, so a
single-process run never loads the cluster modes' code.
"""

import importlib

from tf_cnn_benchmarks.variable_update import modes


def manager_class(mode_name, in_cluster):
  """The manager class of a mode, for a cluster task or a single process."""
  mode = modes.get(mode_name)
  path = mode.cluster_manager if in_cluster else mode.local_manager
  if path is None:
    raise ValueError('variable_update=%s %s' % (
        mode_name, 'runs in a single process' if in_cluster
        else 'needs a cluster'))
  module_name, class_name = path.rsplit('.', 1)
  module = importlib.import_module(
      'tf_cnn_benchmarks.variable_update.' + module_name)
  return getattr(module, class_name)


def make_variable_manager(run_config):
  return manager_class(run_config.params.variable_update,
                       run_config.cluster is not None)(run_config)
