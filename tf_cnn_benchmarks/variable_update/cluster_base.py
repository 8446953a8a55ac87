"""What the managers of the cluster modes share.

Placement of variables over the ps tasks (by size), the task's default
device, the local (within-worker) gradient mean, and how many images one
global-step increment stands for.
"""

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import base
from tf_cnn_benchmarks.variable_update import parameter_server
from tf_cnn_benchmarks.variable_update import sync_barrier
from tf_cnn_benchmarks.variable_update import sync_replicas
from tf_cnn_benchmarks.variable_update.sync_kind import SyncKind

tf1 = tf.compat.v1


def variable_bytes(op):
  """Bytes of the variable an op creates (0 if its shape is unknown)."""
  shape = tf.TensorShape(op.get_attr('shape'))
  if not shape.is_fully_defined():
    return 0
  return shape.num_elements() * tf.as_dtype(op.get_attr('dtype')).size


class PsPlacer:
  """Spreads variables over the ps tasks by size, greedily.

  Each new variable goes to the ps task holding the fewest bytes so far, so
  a few big layers (e.g. the trivial model's 4096-wide dense layers) do not
  all land on one task. Every worker builds the same graph in the same
  order, so every worker computes the same placement.
  """

  def __init__(self, num_ps):
    self.loads = [0] * num_ps

  def place(self, op):
    """The ps device for a new variable op (and count its bytes there)."""
    task = min(range(len(self.loads)), key=lambda i: (self.loads[i], i))
    self.loads[task] += variable_bytes(op)
    return '/job:ps/task:%d/device:CPU:0' % task

  def device_function(self, other_device):
    """Variables to the ps tasks, every other op to ``other_device``."""
    def place(op):
      return self.place(op) if op.type in parameter_server.VARIABLE_OPS else other_device
    return place


class ClusterManagerMixin:
  """Mixed into the cluster managers (before their VariableManager base)."""

  # The cross-worker synchronisation (init_ps_placement_and_sync).
  sync = None

  @property
  def role(self):
    return self.rc.cluster

  @property
  def worker_device(self):
    """The worker's first device (reductions, coordination reads)."""
    return self.rc.tower_devices[0]

  @property
  def report_device(self):
    # Not the parameter device: on a ps task every tower's loss would go
    # there and the mean come back, two RPCs per step for a fetch
    # (step_profile.py).
    if self.mode.has_ps_tasks:
      return self.worker_device
    return self.rc.param_device

  def default_device_scope(self):
    # Ops nobody placed (saver, learning rate, init ops) stay on this task
    # rather than wherever the placer likes (e.g. a ps' disk for a save).
    return tf1.device(self.role.device)

  def init_ps_placement_and_sync(self):
    """For the ps modes: variables spread over the ps tasks and, when
    synchronous, the cross-worker synchronisation: the gradient
    accumulation (sync_replicas), or with --sync_updates=barrier each
    worker's own update and a barrier (sync_barrier)."""
    self.placer = PsPlacer(self.role.num_ps)
    self.sync = None
    if self.role.sync is SyncKind.MEAN:
      self.sync = sync_replicas.SyncReplicas(
          self.role.num_workers, self.role.task_index, self.role.is_chief,
          self.rc.param_device)
    elif self.role.sync is SyncKind.BARRIER:
      self.sync = sync_barrier.SyncBarrier(
          self.role.num_workers, self.role.task_index, self.rc.param_device)

  def gradients_handed_over(self):
    """Ops of the step after which this worker's gradients are with the
    other workers and it only waits for theirs (the progress board counts
    them: cluster/task/progress_board.py). Empty when a step has no such point
    inside it: asynchronous, or one graph, or collectives."""
    return list(self.sync.handed_over) if self.sync is not None else []

  def cluster_start(self, global_step):
    """What this mode needs at start (base.ClusterStart); built last, as
    it initialises whatever local variables exist by then."""
    raise NotImplementedError

  def ps_mode_start(self, post_init_ops=()):
    """Start of the ps modes: the barrier on the parameter device, and the
    sync ops (if synchronous) after init."""
    sync_post_init = self.sync.post_init_ops() if self.sync else []
    return base.ClusterStart(
        self.images_per_global_step(),
        barrier_device=self.rc.param_device,
        own_init_ops=[tf1.local_variables_initializer()],
        chief_post_init_ops=(self.sync.chief_post_init_ops() if self.sync
                             else []),
        post_init_ops=list(post_init_ops) + sync_post_init)

  def images_per_global_step(self):
    """Images one global-step increment stands for (chief's cluster rate)."""
    if self.role.sync is SyncKind.MEAN:  # one update of every worker's mean
      return self.rc.global_batch_size
    return self.rc.batch_size_per_worker

  def local_mean(self, pairs, index):
    """Mean of one variable's tower gradients, on one of this worker's
    towers (round-robin), so only one tensor per worker leaves the host."""
    with tf1.device(self.rc.tower_devices[index % len(
        self.rc.tower_devices)]):
      return base.mean_of([g for g, _ in pairs])
