"""replicated: a copy per tower; gradients all-reduced in the graph.

Each gradient's mean is computed once (on a tower chosen round-robin, or on
the CPU with --all_reduce_spec=pscpu) and every tower applies that same mean
to its own copy, so copies stay identical without ever being re-synced.
"""

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import base

tf1 = tf.compat.v1


class ReplicatedManager(base.VariableManager):
  name = 'replicated'

  def _reduction_device(self, index):
    if self.rc.params.all_reduce_spec == 'pscpu':
      return '/cpu:0'
    return self.towers[index % len(self.towers)]

  def apply_gradients(self, tower_grads, optimizer, global_step):
    updates = []
    for j, pairs in enumerate(zip(*tower_grads)):
      with tf1.device(self._reduction_device(j)):
        mean = base.mean_of([g for g, _ in pairs])
      updates.extend((mean, var) for _, var in pairs)
    return optimizer.apply_gradients(updates, global_step=global_step)

  def post_init_ops(self):
    """Copies start equal: every copy is set from tower 0's."""
    by_name = {}
    for v in tf1.global_variables():
      if v.op.name.startswith('v') and '/' in v.op.name:
        by_name.setdefault(base.canonical_name(v), []).append(v)
    ops = []
    for copies in by_name.values():
      master = [v for v in copies if v.op.name.startswith('v0/')]
      if not master:
        continue
      for v in copies:
        if v is not master[0]:
          with tf1.device(v.device):
            ops.append(v.assign(master[0].read_value()))
    return ops
