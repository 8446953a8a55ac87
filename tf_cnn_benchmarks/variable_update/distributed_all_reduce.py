"""distributed_all_reduce: one graph over every worker's devices.

The controller task builds and runs the only graph; the workers just serve
their devices (serving_task.py) until the controller says it is done. A copy of
every variable per tower, as in replicated mode; each gradient is reduced
hierarchically, so only one tensor per worker crosses the network each way:
  1. mean over a worker's towers, on that worker;
  2. mean over the workers' means, on one worker (round-robin by variable);
  3. the result sent once to each worker and fanned out to its towers.
"""

import collections

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import base
from tf_cnn_benchmarks.variable_update import cluster_base
from tf_cnn_benchmarks.variable_update import replicated

tf1 = tf.compat.v1


def _task_of(device):
  return tf1.DeviceSpec.from_string(device).task


class DistributedAllReduceManager(cluster_base.ClusterManagerMixin,
                                  replicated.ReplicatedManager):
  name = 'distributed_all_reduce'

  def apply_gradients(self, tower_grads, optimizer, global_step):
    by_worker = collections.OrderedDict()
    for t, device in enumerate(self.towers):
      by_worker.setdefault(_task_of(device), []).append(t)
    workers = list(by_worker)
    updates = []
    for j, pairs in enumerate(zip(*tower_grads)):
      worker_means = []
      for towers in by_worker.values():
        with tf1.device(self.towers[towers[j % len(towers)]]):
          worker_means.append(base.mean_of([pairs[t][0] for t in towers]))
      reducer = by_worker[workers[j % len(workers)]][0]
      with tf1.device(self.towers[reducer]):
        mean = base.mean_of(worker_means)
      for towers in by_worker.values():
        with tf1.device(self.towers[towers[0]]):
          received = tf.identity(mean)
        updates.extend((received, pairs[t][1]) for t in towers)
    return optimizer.apply_gradients(updates, global_step=global_step)

  def cluster_start(self, global_step):
    # The controller is the only client: it initialises everything itself.
    del global_step
    return base.ClusterStart(self.rc.global_batch_size)
