"""parameter_server across a cluster: variables on the ps tasks.

Each worker runs its own graph (between-graph replication). Variables live
on the ps tasks, spread by size; every tower of every worker reads them
there. A worker averages its towers' gradients locally, then:
  * --cross_replica_sync (default): pushes the mean to the accumulators on
    the ps; the chief applies the mean over all workers once per cluster
    step (sync_replicas.py); with --sync_updates=barrier (the original's)
    each worker applies its own mean, then all meet at a barrier
    (sync_barrier.py);
  * otherwise: applies it straight to the variables (asynchronous SGD; the
    global step advances once per worker step).
"""

from tf_cnn_benchmarks.variable_update import cluster_base
from tf_cnn_benchmarks.variable_update import parameter_server


class DistributedParameterServerManager(
    cluster_base.ClusterManagerMixin, parameter_server.ParameterServerManager):

  def __init__(self, run_config):
    super().__init__(run_config)
    self.init_ps_placement_and_sync()

  @property
  def caching_device(self):
    # Every use of a variable (the forward op, the weight decay's l2_loss)
    # would otherwise read it on the ps and send it again: with a cache,
    # each variable crosses to this worker once per step (step_profile.py
    # counted 12 ps->worker reads of the trivial model's 6 weights, 6 with
    # the cache), and the worker's towers share the copy.
    return self.worker_device

  def _device_function(self, tower_device):
    # The local mode's towers, with variables spread over the ps tasks.
    return self.placer.device_function(tower_device)

  def apply_gradients(self, tower_grads, optimizer, global_step):
    averaged = [(self.local_mean(pairs, j), pairs[0][1])
                for j, pairs in enumerate(zip(*tower_grads))]
    if self.sync is None:
      return optimizer.apply_gradients(averaged, global_step=global_step)
    return self.sync.apply(averaged, optimizer, global_step)

  def cluster_start(self, global_step):
    del global_step
    return self.ps_mode_start()
