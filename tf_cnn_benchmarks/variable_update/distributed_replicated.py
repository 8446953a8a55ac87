"""distributed_replicated: a copy per tower on each worker, a master on ps.

Each tower computes with its own worker-local copy (a local variable, so
only its worker initialises it). A master copy of each trainable variable
lives on the ps tasks (spread by size) and is what checkpoints hold. A step:
  1. tower gradients are averaged locally (all-reduced within the worker);
  2. the worker's mean is combined through the master: with
     --cross_replica_sync, the chief applies the mean over all workers once
     (sync_replicas.py), or with --sync_updates=barrier each worker applies
     its own mean and all meet at a barrier (sync_barrier.py); without it,
     each worker applies its own mean;
  3. every worker reads the updated master back into all its tower copies.
With --variable_consistency=relaxed, step 2 sends the worker's mean of the
previous step (zeros at the first), as replicated mode defers its gradients
(all_reduce.Deferred): the push to the ps need not wait for this step's
backward pass, and updates show up one step late.
Non-trainable variables of tower 0 (batch-norm moving statistics) are kept
on the ps directly, so a checkpoint holds them too.
"""

import contextlib

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import all_reduce
from tf_cnn_benchmarks.variable_update import base
from tf_cnn_benchmarks.variable_update import cluster_base

tf1 = tf.compat.v1

MASTER_PREFIX = 'ps_copy/'


class DistributedReplicatedManager(cluster_base.ClusterManagerMixin,
                                   base.VariableManager):
  name = 'distributed_replicated'

  def __init__(self, run_config):
    super().__init__(run_config)
    self.init_ps_placement_and_sync()
    self._masters = {}   # tower-0 copy's name -> its master on the ps

  def _copy_getter(self, tower_index):
    seeded = base.seeded_initializer_getter(self.seed)

    def getter(getter, name, *args, **kwargs):
      if kwargs.get('trainable') is False and tower_index == 0:
        with tf1.device(self.placer.device_function(self.towers[0])):
          return seeded(getter, name, *args, **kwargs)
      kwargs['collections'] = [tf1.GraphKeys.LOCAL_VARIABLES]
      return seeded(getter, name, *args, **kwargs)

    return getter

  @contextlib.contextmanager
  def tower_scope(self, index):
    with tf1.device(self.towers[index]), tf1.variable_scope(
        'v%d' % index, custom_getter=self._copy_getter(index)):
      yield

  def _master(self, local):
    """The ps copy of a tower-0 variable, made once, starting equal to it."""
    key = local.op.name
    if key not in self._masters:
      name = MASTER_PREFIX + base.canonical_name(local)
      with tf1.device(None), tf1.device(
          self.placer.device_function(self.worker_device)):
        # Same seeded initial value as the local copy; only the chief runs
        # this initializer (masters are global variables).
        self._masters[key] = tf1.Variable(
            local.initial_value, trainable=False, name=name,
            collections=[tf1.GraphKeys.GLOBAL_VARIABLES])
    return self._masters[key]

  def apply_gradients(self, tower_grads, optimizer, global_step):
    pairs = []
    defer = None
    if self.rc.params.variable_consistency == 'relaxed':
      defer = all_reduce.Deferred()
    for j, tower_pairs in enumerate(zip(*tower_grads)):
      mean = self.local_mean(tower_pairs, j)
      if defer is not None:
        mean = defer(mean)
      pairs.append((mean, self._master(tower_pairs[0][1])))
    if self.sync is None:
      update = optimizer.apply_gradients(pairs, global_step=global_step)
    else:
      update = self.sync.apply(pairs, optimizer, global_step)
    return tf.group(self._refresh_copies(tower_grads, after=update))

  def _refresh_copies(self, tower_grads, after=None):
    """Assigns every tower copy from its master (after ``after``)."""
    deps = [after] if after is not None else []
    ops = []
    with tf.control_dependencies(deps):
      for tower_pairs in zip(*tower_grads):
        master = self._master(tower_pairs[0][1])
        with tf1.device(self.worker_device):
          # One transfer per worker, then a local fan-out to the towers.
          fresh = tf.identity(master.read_value())
        for _, local in tower_pairs:
          with tf1.device(local.device):
            ops.append(local.assign(fresh))
    return ops

  def _ensure_masters(self):
    # Forward-only runs build no update, but the masters still hold the
    # shared weights every worker starts from (and a checkpoint saves).
    for local in self.tower_variables(0):
      self._master(local)

  def savable_variables(self):
    self._ensure_masters()
    saved = {}
    for v in tf1.global_variables():
      name = v.op.name
      if name.startswith(MASTER_PREFIX):
        saved[name[len(MASTER_PREFIX):]] = v
      elif name.startswith('v0/'):
        saved[base.canonical_name(v)] = v
    return saved

  def cluster_start(self, global_step):
    del global_step
    self._ensure_masters()
    refresh = self._refresh_copies(
        [[(None, v) for v in self.tower_variables(i)]
         for i in range(len(self.towers))])
    return self.ps_mode_start(post_init_ops=refresh)
