"""replicated: a copy per tower; gradients all-reduced in the graph.

Every tower's gradients are turned into their mean on every tower
(all_reduce.py: by default each mean computed once, on a tower chosen
round-robin; --all_reduce_spec picks pscpu, a ring, ..., and the other
all-reduce flags pack, cast or defer the gradients on the way), and every
tower applies that same mean to its own copy, so copies stay identical
without ever being re-synced.
"""

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import all_reduce
from tf_cnn_benchmarks.variable_update import base

tf1 = tf.compat.v1


class ReplicatedManager(base.VariableManager):
  name = 'replicated'

  def apply_gradients(self, tower_grads, optimizer, global_step):
    opts = all_reduce.options_from(self.rc.params, self.rc.compute_dtype)
    means = all_reduce.batch_mean(
        [[g for g, _ in pairs] for pairs in tower_grads], self.towers, opts)
    updates = [(g, var) for tower_means, pairs in zip(means, tower_grads)
               for g, (_, var) in zip(tower_means, pairs)]
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
