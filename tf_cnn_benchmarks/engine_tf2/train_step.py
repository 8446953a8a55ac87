"""The tf2 engine's step: one tf.function, the model run by strategy.run.

Per replica (the graph engine's tower): the model's forward pass from the
shared builder (towers.forward), its loss and weight decay
(towers.tower_loss / weight_decay), the gradients by GradientTape,
the clip, then the optimizer's mean-and-apply (optimizer.py). The step
returns the replicas' mean loss, which the step loop fetches each step as
the graph engine fetches its loss.

Variables are made before the first step by one trace of the model that
never runs (variable_store.py): running it would move batch norm's moving
averages before training starts.
"""

import time

import tensorflow as tf
# The coordinator's test of a worker failure has no public name.
from tensorflow.python.distribute.coordinator import cluster_coordinator  # pylint: disable=g-direct-tensorflow-import

from tf_cnn_benchmarks import contracts
from tf_cnn_benchmarks.training import loss_scale
from tf_cnn_benchmarks.training import towers
from tf_cnn_benchmarks.training import update_in_place
from tf_cnn_benchmarks.training import weight_decay
from tf_cnn_benchmarks.engine_tf2 import inputs
from tf_cnn_benchmarks.engine_tf2 import optimizer as optimizer_lib
from tf_cnn_benchmarks.engine_tf2 import variable_store
from tf_cnn_benchmarks.measure import mfu
from tf_cnn_benchmarks.variable_update.sync_kind import SyncKind


class Trainer:
  """The built step: ``step()`` runs one and returns its loss (float)."""

  def __init__(self, rc, chosen, source):
    """``chosen``: the strategies.Chosen to train under."""
    params = rc.params
    self._rc = rc
    self._strategy = strategy = chosen.strategy
    # Seeds the initial weights and the synthetic batches as the graph
    # engine's graph seed does; it also restarts eager random ops' sequences,
    # so a second run in this process starts from the same weights.
    tf.random.set_seed(params.tf_random_seed)
    self.store = variable_store.VariableStore(params.tf_random_seed)
    # ParameterServerStrategy: the steps are scheduled on the workers by
    # its coordinator (the runtime's).
    self._coordinator = chosen.coordinator
    self._iterator = inputs.distributed_iterator(strategy, rc, source,
                                                 self._coordinator)
    # Under the coordinator: a round per step (see step()).
    self._barrier = rc.cluster is not None and (
        rc.cluster.sync is SyncKind.BARRIER)
    self._queued = None
    self._rounds_left = rc.num_warmup_batches + rc.num_batches
    with strategy.scope():
      self._create_variables()
      self.loss_scale = (loss_scale.LossScale.in_strategy(rc.loss_scaling)
                         if rc.loss_scaling else None)
      self.optimizer = optimizer_lib.Optimizer(
          rc, self.store.trainable_variables, self.loss_scale)
    # --xla_compile: the replica's whole step (model, gradients, update)
    # compiled with jit_compile=True; the iterator read stays outside, XLA
    # has no kernel for it. flag_checks allows it on one device only, where
    # the update's merge_call is a plain call.
    self._jit = bool(params.xla_compile or params.xla)
    self._replica = (tf.function(self._replica_step, autograph=False,
                                 jit_compile=True) if self._jit
                     else self._replica_step)
    self._step = tf.function(self._step_fn, autograph=False)

  def _create_variables(self):
    rc = self._rc

    def build(images):
      with self.store.creating():
        towers.forward(rc, images, rc.training)
    tf.function(build, autograph=False).get_concrete_function(
        inputs.input_spec(rc))

  def _replica_step(self, images, labels):
    rc, params = self._rc, self._rc.params
    variables = self.store.trainable_variables
    with self.store.reusing(), tf.GradientTape() as tape:
      logits, aux = towers.forward(rc, images, True)
      base_loss = towers.tower_loss(logits, aux, labels,
                                         rc.model.num_classes)
      total_loss = base_loss + weight_decay.penalty(
          variables, params.weight_decay, params.single_l2_loss_op)
      if self.loss_scale is not None:
        scaled_loss = self.loss_scale.scaled(total_loss)
    if self.loss_scale is None:
      grads = tape.gradient(total_loss, variables)
    else:
      grads = self.loss_scale.unscaled(tape.gradient(scaled_loss, variables))
    if params.gradient_clip is not None:
      grads = [tf.clip_by_norm(g, params.gradient_clip) for g in grads]
    [pairs] = update_in_place.gate([list(zip(grads, variables))],
                                   [total_loss])
    self.optimizer.apply([(g, v) for g, v in pairs if g is not None])
    if params.loss_type_to_report == 'base_loss':
      return base_loss
    return total_loss

  def _step_fn(self, iterator):
    images, labels = next(iterator)
    losses = self._strategy.run(self._replica, args=(images, labels))
    # This process's replicas' mean, as the graph engine reports its
    # towers' (reduce_mean of their stack); across workers no reduction:
    # each worker reports its own, as a graph engine's cluster task does.
    return tf.reduce_mean(tf.stack(
        self._strategy.experimental_local_results(losses)))

  def step(self):
    if self._coordinator is None:
      return float(self._step(self._iterator))
    # A round: one step per worker (a replica each: rc.num_towers),
    # scheduled at once and run wherever a worker is free, each applying
    # its own gradient; the step's loss is their mean, as over a graph
    # engine's towers. --sync_updates=barrier (the original's synchronous
    # ps semantics): the coordinator waits for the round before the next.
    # Asynchronous: the next round is queued before this one is waited
    # for, so no worker idles while the coordinator collects; nothing is
    # queued past the last warm-up step or the last timed one, so the
    # timed loop runs exactly its steps and the run trains no extra one.
    self._rounds_left -= 1
    if self._barrier:
      return self._losses(self._round())
    if self._queued is None:
      self._queued = self._round()
    phase_ends = self._rounds_left in (0, self._rc.num_batches)
    done, self._queued = self._queued, (None if phase_ends
                                        else self._round())
    return self._losses(done)

  def _round(self):
    return [self._coordinator.schedule(self._step, args=(self._iterator,))
            for _ in range(self._rc.num_towers)]

  def _losses(self, scheduled):
    losses, lost = [], None
    for remote in scheduled:
      try:
        losses.append(float(remote.fetch()))
      except Exception as e:  # pylint: disable=broad-except
        # The coordinator runs a lost worker's steps on the others, but
        # not the fetch of a loss left on a worker lost just after its
        # step: that step's update is in, only its loss is gone. Whether
        # an error is a lost worker is the coordinator's own test, so the
        # two never disagree.
        if not cluster_coordinator._is_worker_failure(e):  # pylint: disable=protected-access
          raise
        lost = e
    if not losses:
      raise lost
    return sum(losses) / len(losses)

  def global_step(self):
    """The optimizer's step count now (this process's copy; a ps's under
    ParameterServerStrategy)."""
    return int(self.optimizer.global_step.numpy())

  def gflops_per_image(self):
    """FLOPs of one step per image, counted on the traced step's graph
    (measure/flops.py, as for the graph engine's fetches): what its outputs
    and its stateful ops (the updates) need, as the function runtime prunes
    the rest (the tape's gradient of the input images, for one)."""
    if self._jit:  # the work is inside the compiled replica function
      graph = self._replica.get_concrete_function(
          *inputs.input_spec(self._rc, with_labels=True)).graph
    else:
      graph = self._step.get_concrete_function(self._iterator).graph
    # One traced step runs this process's replicas; under a coordinator,
    # one worker's replica.
    images = (self._rc.batch_size_per_device if self._coordinator
              else self._rc.batch_size_per_worker)
    return mfu.gflops_per_image(
        list(graph.outputs) + list(graph.control_outputs), images)


class FunctionStepRunner:
  """The tf2 engine's contracts.StepRunner (what step_loop.StepLoop runs):
  the tf2 step, each step run by the runtime as it runs a
  session.run step (run_function_step: watched, and in a cluster
  counted on its board)."""

  def __init__(self, trainer, runtime):
    self._trainer = trainer
    self._runtime = runtime

  def step(self, extra=None):
    assert not extra, 'the tf2 engine fetches the loss only'
    start = time.perf_counter()
    loss = self._runtime.run_function_step(self._trainer.step)
    return contracts.StepResult(time.perf_counter() - start,
                                {'loss': loss})
