"""Synchronous SGD across workers through accumulators on the ps tasks.

One cluster step:
  1. every worker adds its gradient (already averaged over its towers) to
     one ConditionalAccumulator per variable, next to the variable;
  2. the chief, in the same session.run, takes the mean of exactly
     num_workers gradients from every accumulator, applies it once (the
     global step advances once) and puts the new global step as a token in
     every worker's own token queue;
  3. every worker (the chief too) waits for its token before its run ends.

So each update is the average of every worker's gradient, applied once,
unlike the original, which let each worker apply its own gradient inside a
lockstep barrier. A queue per worker (not one shared queue) keeps a fast
worker from taking a slow one's token, which could otherwise let one
worker's gradient count twice in a step, or deadlock the chief.

The token is the global step after the update; a worker tags its next
gradient with it, and an accumulator drops gradients tagged with an older
step, so a stale gradient can never enter an update.
"""

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import base

tf1 = tf.compat.v1


def worker_queue(device, prefix, worker_index, dtype=tf.int64):
  """Worker ``worker_index``'s queue of scalars on ``device``, shared by
  name by every worker's graph (the token queues; sync_barrier.py's)."""
  name = '%s_%d' % (prefix, worker_index)
  with tf1.device(device):
    return tf1.FIFOQueue(-1, [dtype], shapes=[[]], shared_name=name,
                         name=name)


def _token_queue(device, worker_index):
  return worker_queue(device, 'sync_token_queue', worker_index)


class SyncReplicas:
  """Builds the synchronous update of one worker's graph."""

  def __init__(self, num_workers, task_index, is_chief, token_device):
    self.num_workers = num_workers
    self.task_index = task_index
    self.is_chief = is_chief
    self.token_device = token_device
    with tf1.device(token_device):
      # The step this worker's next gradient belongs to; this worker's own
      # (its name), but kept beside the token queues and the board rather
      # than on the worker: set from the token and read by the
      # accumulators there, it then costs no RPC, and the step's last op
      # is on the board's device, which counts the step done without
      # another hop (step_profile.py).
      self.local_step = tf1.Variable(
          tf.constant(0, tf.int64), trainable=False,
          name='sync_local_step_%d' % task_index,
          collections=[tf1.GraphKeys.LOCAL_VARIABLES])
    self._accumulators = []
    self._global_step = None
    # This worker's contributions of a step (apply builds them): after
    # them its gradients are with the others and it only waits.
    self.handed_over = []

  def apply(self, grads_and_vars, optimizer, global_step):
    """The train op: contribute, (chief: aggregate and apply), wait."""
    self._global_step = global_step
    contributions = []
    pairs = []
    # One read for every accumulator: each read would be a tensor of its
    # own sent to the ps (one RPC per variable per step).
    with tf1.device(self.token_device):
      local_step = self.local_step.read_value()
    for grad, var in grads_and_vars:
      with tf1.device(var.device):
        accumulator = tf1.ConditionalAccumulator(
            grad.dtype, shape=var.shape,
            shared_name='%s/sync_grad_accumulator' % base.canonical_name(
                var))
      self._accumulators.append(accumulator)
      contributions.append(accumulator.apply_grad(
          grad, local_step=local_step))
      pairs.append((accumulator, var))
    self.handed_over = contributions
    own_queue = _token_queue(self.token_device, self.task_index)
    before_wait = contributions
    if self.is_chief:
      with tf.control_dependencies(contributions):
        mean_grads = []
        for accumulator, var in pairs:
          with tf1.device(var.device):
            mean_grads.append((accumulator.take_grad(self.num_workers), var))
      update = optimizer.apply_gradients(mean_grads, global_step=global_step)
      with tf.control_dependencies([update]), tf1.device(self.token_device):
        new_step = tf.identity(global_step.read_value())
        before_wait = [
            (own_queue if i == self.task_index else
             _token_queue(self.token_device, i)).enqueue([new_step])
            for i in range(self.num_workers)]
    with tf.control_dependencies(before_wait):
      token = own_queue.dequeue()
    with tf1.device(self.token_device):
      return tf.group(self.local_step.assign(token))

  def chief_post_init_ops(self):
    """Accumulators accept gradients of the current (maybe restored) step."""
    return [a.set_global_step(self._global_step)
            for a in self._accumulators] if self._global_step is not None \
        else []

  def post_init_ops(self):
    if self._global_step is None:
      return []
    return [self.local_step.assign(self._global_step.read_value())]
