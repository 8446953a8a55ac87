"""parameter_server across a cluster: variables on the ps tasks.

Each worker runs its own graph (between-graph replication). Variables live
on the ps tasks, spread by size; every tower of every worker reads them
there. A worker averages its towers' gradients locally, then:
  * --cross_replica_sync (default): pushes the mean to the accumulators on
    the ps; the chief applies the mean over all workers once per cluster
    step (sync_replicas.py);
  * otherwise: applies it straight to the variables (asynchronous SGD; the
    global step advances once per worker step).
"""

import contextlib

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import base
from tf_cnn_benchmarks.variable_update import cluster_base

tf1 = tf.compat.v1


class DistributedParameterServerManager(cluster_base.ClusterManagerMixin,
                                        base.VariableManager):
  name = 'parameter_server'
  per_tower_copies = False

  def __init__(self, run_config):
    super().__init__(run_config)
    self.init_ps_placement_and_sync()

  @contextlib.contextmanager
  def tower_scope(self, index):
    with tf1.device(self.placer.device_function(self.towers[index])), \
        tf1.variable_scope('v0', reuse=index > 0,
                           custom_getter=base.seeded_initializer_getter(
                               self.seed)):
      yield

  def apply_gradients(self, tower_grads, optimizer, global_step):
    averaged = [(self.local_mean(pairs, j), pairs[0][1])
                for j, pairs in enumerate(zip(*tower_grads))]
    if self.sync is None:
      return optimizer.apply_gradients(averaged, global_step=global_step)
    return self.sync.apply(averaged, optimizer, global_step)

  def coordination(self, global_step):
    return self.ps_mode_coordination(global_step)
