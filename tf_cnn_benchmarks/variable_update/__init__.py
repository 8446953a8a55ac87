"""Variable managers, one module per --variable_update mode."""

from tf_cnn_benchmarks.variable_update.collective_all_reduce import (
    CollectiveAllReduceManager)
from tf_cnn_benchmarks.variable_update.distributed_all_reduce import (
    DistributedAllReduceManager)
from tf_cnn_benchmarks.variable_update.distributed_parameter_server import (
    DistributedParameterServerManager)
from tf_cnn_benchmarks.variable_update.distributed_replicated import (
    DistributedReplicatedManager)
from tf_cnn_benchmarks.variable_update.independent import IndependentManager
from tf_cnn_benchmarks.variable_update.parameter_server import (
    ParameterServerManager)
from tf_cnn_benchmarks.variable_update.replicated import ReplicatedManager

_MANAGERS = {m.name: m for m in (ParameterServerManager, ReplicatedManager,
                                 IndependentManager)}
# A cluster task's manager (rc.cluster is set); parameter_server has both.
_CLUSTER_MANAGERS = {m.name: m for m in (
    DistributedParameterServerManager, DistributedReplicatedManager,
    CollectiveAllReduceManager, DistributedAllReduceManager)}


def make_variable_manager(run_config):
  mode = run_config.params.variable_update
  managers = (_CLUSTER_MANAGERS if getattr(run_config, 'cluster', None)
              else _MANAGERS)
  if mode not in managers:
    raise ValueError('variable_update=%s %s' % (
        mode, 'runs in a single process' if managers is _CLUSTER_MANAGERS
        else 'needs a cluster'))
  return managers[mode](run_config)
