"""--sync_updates=barrier: each worker applies its own gradient, then waits.

The original tool's synchronous ps modes: a worker applies the mean of its
own towers' gradients to the ps variables itself (the global step advances
once per worker, N times per cluster step), and the step ends at a barrier
that every worker must reach after its update. So the variables move N
times per cluster step, once per worker's gradient; no worker starts the
next step before every update of this one is in.

Within a step the workers are not ordered: one worker's update may land
before or after another reads the variables, as in the original. (The
default, sync_replicas.py, has no such race: one update per step.)

The barrier: one queue per worker on the token device. After its update a
worker puts a token in every other worker's queue, then takes N - 1 tokens
from its own: it leaves once every other worker has updated. A dead worker
leaves the others blocked in the dequeue, which the step's deadline and
the watchdog end (cluster/task/runtime.py), as with the default's token queue.
"""

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import sync_replicas

tf1 = tf.compat.v1


def _barrier_queue(device, worker_index):
  return sync_replicas.worker_queue(device, 'sync_barrier_queue',
                                    worker_index, tf.bool)


class SyncBarrier:
  """Builds the barrier-synchronised update of one worker's graph (the
  same interface as sync_replicas.SyncReplicas)."""

  def __init__(self, num_workers, task_index, token_device):
    self.num_workers = num_workers
    self.task_index = task_index
    self.token_device = token_device
    # This worker's own update ops (apply builds them): after them it only
    # waits for the others (progress_board.py times its compute up to here).
    self.handed_over = []

  def apply(self, grads_and_vars, optimizer, global_step):
    """The train op: apply this worker's gradient, then the barrier."""
    update = optimizer.apply_gradients(grads_and_vars, global_step=global_step)
    # The update op's own inputs are not the gradients (it groups the
    # applies); what hands them over is every op consuming one, which is
    # what a test's slow_compute pause must precede (fault_injection.py).
    consumers = {op for g, _ in grads_and_vars for op in g.consumers()
                 if op.type.startswith('ResourceApply') or
                 op.type.startswith('Apply')}
    self.handed_over = sorted(consumers, key=lambda op: op.name) + [update]
    if self.num_workers == 1:
      return update
    own_queue = _barrier_queue(self.token_device, self.task_index)
    with tf.control_dependencies([update]), tf1.device(self.token_device):
      token = tf.constant(True)
      arrived = [_barrier_queue(self.token_device, i).enqueue([token])
                 for i in range(self.num_workers) if i != self.task_index]
    # The step's last op on the token device, which hosts the board too:
    # the board counts the step done without another hop.
    with tf.control_dependencies(arrived), tf1.device(self.token_device):
      return tf.group(own_queue.dequeue_many(self.num_workers - 1))

  def chief_post_init_ops(self):
    return []

  def post_init_ops(self):
    return []
