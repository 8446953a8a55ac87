"""collective_all_reduce: each worker its own graph, collective ops across.

A copy of every variable per tower, as in replicated mode. Tower gradients
are averaged within the worker, then TensorFlow's collective all-reduce
averages the workers' means (one collective per variable, on each worker's
first device), and every tower applies that same mean: the copies on every
worker stay identical without a ps.

Start: worker 0 initialises (and restores) its copies, and a collective
"broadcast" (an all-reduce to which only the chief contributes non-zeros)
gives every worker the chief's values, global step and optimizer slots.
The start barrier lives on worker 0. No collective hangs the run on a
missing peer: the start's broadcasts carry --startup_timeout as their own
timeout; a training step's all-reduces carry none, and are bounded by the
step's deadline instead (the role's step_deadline_seconds, just past the
watchdog's stall shutdown, as the watchdog normally ends the task first,
with a report), which cancels the whole step: see apply_gradients.
"""

import tensorflow as tf
from tensorflow.python.ops import collective_ops  # pylint: disable=g-direct-tensorflow-import

from tf_cnn_benchmarks.variable_update import base
from tf_cnn_benchmarks.variable_update import cluster_base
from tf_cnn_benchmarks.variable_update import replicated

tf1 = tf.compat.v1

GROUP_KEY = 1
# Instance keys: one per collective op, the same in every worker's graph
# (every worker builds the same graph in the same order).
_BROADCAST_KEYS = 1
_GRADIENT_KEYS = 100000


class CollectiveAllReduceManager(cluster_base.ClusterManagerMixin,
                                 replicated.ReplicatedManager):
  name = 'collective_all_reduce'

  def _all_reduce(self, tensor, key, final_op, timeout):
    return collective_ops.all_reduce(
        tensor, self.role.num_workers, GROUP_KEY, key, merge_op='Add',
        final_op=final_op, timeout=timeout)

  def apply_gradients(self, tower_grads, optimizer, global_step):
    # No timeout on these all-reduces, though a step must not wait forever:
    # for every run of a collective with a timeout, TensorFlow starts a
    # thread that sleeps for the whole timeout, woken by nothing when the
    # collective completes (BaseCollectiveExecutor::ExecuteAsync). At the
    # step's deadline of minutes and steps of milliseconds, a worker held
    # thousands of such threads (one per variable per step), until the
    # process or the host ran out of them. The step is bounded all the same:
    # its session.run has the step's deadline (ClusterRuntime's
    # step_run_options; the session's operation_timeout_in_ms for a run
    # without options), and a run past it is cancelled, which aborts every
    # collective still waiting in it (the kernel's cancellation callback).
    updates = []
    for j, pairs in enumerate(zip(*tower_grads)):
      worker_mean = self.local_mean(pairs, j)
      with tf1.device(self.worker_device):
        mean = self._all_reduce(worker_mean, _GRADIENT_KEYS + j, 'Div',
                                timeout=0)
      updates.extend((mean, var) for _, var in pairs)
    return optimizer.apply_gradients(updates, global_step=global_step)

  def _broadcast_from_chief(self, global_step):
    ops = []
    shared = sorted(self.savable_variables().items()) + [
        ('global_step', global_step)]
    for k, (_, var) in enumerate(shared):
      with tf1.device(var.device):
        value = var.read_value()
        if not self.role.is_chief:
          value = tf.zeros_like(value)
        # Run once: its sleeping timeout threads (see apply_gradients)
        # are few and end with --startup_timeout.
        total = self._all_reduce(value, _BROADCAST_KEYS + k, 'Id',
                                 self.rc.params.startup_timeout)
        ops.append(var.assign(total))
    return ops

  def cluster_start(self, global_step):
    return base.ClusterStart(
        self.images_per_global_step(),
        barrier_device='/job:worker/task:0/device:CPU:0',
        own_init_ops=[tf1.global_variables_initializer(),
                      tf1.local_variables_initializer()],
        post_init_ops=self._broadcast_from_chief(global_step))
