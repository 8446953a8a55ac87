"""independent: a copy per tower, no communication at all.

Each tower trains on its own; this measures pure compute scaling. The
reported loss is the mean over towers.
"""

from tf_cnn_benchmarks.variable_update import base


class IndependentManager(base.VariableManager):
  name = 'independent'

  def apply_gradients(self, tower_grads, optimizer, global_step):
    pairs = [pair for grads in tower_grads for pair in grads]
    return optimizer.apply_gradients(pairs, global_step=global_step)
