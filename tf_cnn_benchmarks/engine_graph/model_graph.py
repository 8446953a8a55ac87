"""Builds the graph of one run: towers, losses, gradients, the update op.

Data flow: input source -> one tower per device (model from the registry,
built with a layers.Builder inside the variable manager's tower scope) ->
per-tower loss and gradients -> the variable manager turns them into one
update op. What the session runner needs comes back as a BuiltGraph.
"""

import contextlib
import dataclasses
from typing import List, Optional

import tensorflow as tf

from tf_cnn_benchmarks.run import local_runtime
from tf_cnn_benchmarks.config import run_mode
from tf_cnn_benchmarks.training import loss_scale
from tf_cnn_benchmarks.training import towers
from tf_cnn_benchmarks.training import optimizers
from tf_cnn_benchmarks.engine_graph import summaries
from tf_cnn_benchmarks.training import update_in_place
from tf_cnn_benchmarks import variable_update
from tf_cnn_benchmarks.training import weight_decay

tf1 = tf.compat.v1


@dataclasses.dataclass
class BuiltGraph:
  graph: tf.Graph
  # Run every step: the update op in training, else a no-op.
  step_op: object
  # Pulls one input batch per tower, without the model.
  input_step: object
  # Scalars fetched every step (float32): reported loss and base loss.
  total_loss: object
  base_loss: object
  # Counts of correct top-1/top-5 predictions in the step (or None).
  top_1_correct: Optional[object]
  top_5_correct: Optional[object]
  global_step: object
  learning_rate: Optional[object]
  init_ops: List[object]
  post_init_ops: List[object]
  input_init_ops: List[object]
  saver: object
  variable_manager: object
  num_trainable_parameters: int
  # Evaluation during training (run/evaluation.py): correct top-1/top-5
  # predictions of one validation step.
  eval_top_1_correct: Optional[object] = None
  eval_top_5_correct: Optional[object] = None
  # TensorBoard summaries of a step (engine_graph/summaries.py), or None.
  summary_op: Optional[object] = None
  # The loss scale of half-precision training (training/loss_scale.py), or
  # None.
  loss_scale: Optional[object] = None






def _learning_rate(rc, global_step):
  """The schedule's tensor; on this worker's CPU with --compute_lr_on_cpu
  (keeps the few scalar ops out of an accelerator's or XLA's graph)."""
  params = rc.params
  scope = contextlib.nullcontext()
  if params.compute_lr_on_cpu:
    cpu = tf.DeviceSpec.from_string(rc.tower_devices[0]).replace(
        device_type='CPU', device_index=0)
    scope = tf1.device(cpu.to_string())
  with scope:
    return optimizers.learning_rate(rc, global_step)






def _eval_towers(rc, vm, eval_source):
  """Correct top-1/top-5 counts of one validation step, summed over the
  towers; each tower's forward pass reads its training variables (batch
  norm with the moving statistics)."""
  top1, top5 = [], []
  for i, (images, labels) in enumerate(
      eval_source.tower_batches(rc.tower_devices)):
    with vm.eval_scope(i):
      logits, _ = towers.forward(rc, images, training=False)
      top1.append(towers.correct_in_top_k(logits, labels, 1))
      top5.append(towers.correct_in_top_k(logits, labels, 5))
  return tf.math.add_n(top1), tf.math.add_n(top5)


def build(rc, input_source, runtime=None, want_accuracy=False,
          eval_source=None, summary_verbosity=0):
  """Builds the run's graph (rc: a run_config.RunConfig; runtime: the
  driver's, which may add its own parts: a cluster's). ``eval_source``:
  the validation input of evaluation during training, or None;
  ``summary_verbosity``: TensorBoard summaries to build (0: none)."""
  runtime = runtime or local_runtime.LocalRuntime()
  params = rc.params
  graph = tf.Graph()
  with graph.as_default(), contextlib.ExitStack() as scopes:
    tf1.set_random_seed(params.tf_random_seed)
    vm = variable_update.make_variable_manager(rc)
    scopes.enter_context(vm.default_device_scope())
    with tf1.device(rc.param_device):
      global_step = tf1.train.get_or_create_global_step()
    scaler = (loss_scale.LossScale.in_graph(rc.loss_scaling, rc.param_device)
              if rc.training and rc.loss_scaling else None)

    tower_inputs = input_source.tower_batches(rc.tower_devices)
    # Pulls one batch per tower and nothing else: --input_only's step, and
    # the probe that tells whether training was input-bound.
    input_step = tf.group(*[t for pair in tower_inputs for t in pair],
                          name='input_step')
    tower_total, tower_base, tower_grads = [], [], []
    top1, top5 = [], []
    bn_update_ops = []
    for i, (images, labels) in enumerate(tower_inputs):
      updates_before = len(tf1.get_collection(tf1.GraphKeys.UPDATE_OPS))
      with vm.tower_scope(i):
        logits, aux = towers.forward(rc, images, rc.training)
        base_loss = towers.tower_loss(logits, aux, labels, rc.model.num_classes)
        total_loss = base_loss
        if rc.training:
          variables = vm.tower_variables(i)
          penalty, reads = weight_decay.penalty_and_reads(
              variables, params.weight_decay, params.single_l2_loss_op)
          total_loss = base_loss + penalty
          # The gradients of total_loss, the penalty's part summed in
          # place (training/weight_decay.py).
          grads = weight_decay.gradients(base_loss, variables, reads,
                                         params.weight_decay, scaler)
          if params.sparse_to_dense_grads:
            grads = towers.densify(grads)
          if params.gradient_clip is not None:
            grads = [tf.clip_by_norm(g, params.gradient_clip) for g in grads]
          tower_grads.append(list(zip(grads, variables)))
        if want_accuracy or rc.mode.counts_accuracy:
          top1.append(towers.correct_in_top_k(logits, labels, 1))
          top5.append(towers.correct_in_top_k(logits, labels, 5))
      if i == 0:
        # Moving batch-norm statistics are updated from tower 0 only, as in
        # the original: one tower's estimate is enough, and in
        # parameter_server mode several towers would race on one variable.
        bn_update_ops = tf1.get_collection(
            tf1.GraphKeys.UPDATE_OPS)[updates_before:]
      tower_total.append(total_loss)
      tower_base.append(base_loss)

    with tf1.device(vm.report_device):
      total_loss = tf.reduce_mean(tf.stack(tower_total))
      base_loss = tf.reduce_mean(tf.stack(tower_base))
      top_1 = tf.math.add_n(top1) if top1 else None
      top_5 = tf.math.add_n(top5) if top5 else None

    lr = None
    if rc.training:
      lr = _learning_rate(rc, global_step)
      optimizer = optimizers.make_optimizer(params, lr)
      tower_grads = update_in_place.gate(tower_grads, tower_total)
      with tf.control_dependencies(bn_update_ops):
        step_op = _update(vm, tower_grads, optimizer, global_step, scaler)
    elif rc.mode is run_mode.RunMode.INPUT_ONLY:
      step_op = input_step
      # Nothing is computed from the images; the loss column reads 0.
      total_loss = base_loss = tf.constant(0.0)
    else:
      step_op = tf.no_op()

    eval_top_1 = eval_top_5 = None
    if eval_source is not None:
      eval_top_1, eval_top_5 = _eval_towers(rc, vm, eval_source)
    summary_op = (summaries.build(summary_verbosity, total_loss, lr,
                                  tower_grads[0]) if rc.training else None)

    savable = vm.savable_variables()
    savable[global_step.op.name] = global_step
    # The optimizer's slots (momentum etc.) of tower 0 are saved too, so a
    # resumed run continues the same trajectory.
    saver = tf1.train.Saver(savable, max_to_keep=params.max_ckpts_to_keep,
                            save_relative_paths=True)
    num_params = sum(int(v.shape.num_elements())
                     for v in vm.tower_variables(0))
    # Last: a cluster's start initialises whatever local variables exist
    # by now.
    step_op = runtime.wire_graph(vm, global_step, step_op)
    built = BuiltGraph(
        graph=graph, step_op=step_op, input_step=input_step,
        total_loss=total_loss,
        base_loss=base_loss, top_1_correct=top_1, top_5_correct=top_5,
        global_step=global_step, learning_rate=lr,
        init_ops=[tf1.global_variables_initializer(),
                  tf1.local_variables_initializer()],
        post_init_ops=vm.post_init_ops(),
        input_init_ops=list(input_source.initializers()) + (
            list(eval_source.initializers()) if eval_source else []),
        saver=saver, variable_manager=vm,
        num_trainable_parameters=num_params, eval_top_1_correct=eval_top_1,
        eval_top_5_correct=eval_top_5,
        summary_op=summary_op, loss_scale=scaler)
  return built


def _update(vm, tower_grads, optimizer, global_step, scaler):
  """The variable manager's update op; with an automatic loss scale, run
  only when every tower's gradients are finite (a non-finite one would be
  in their mean), the step otherwise skipped but counted."""
  def apply():
    return vm.apply_gradients(tower_grads, optimizer, global_step)
  if scaler is None:
    return apply()
  return scaler.update_or_skip(
      [g for pairs in tower_grads for g, _ in pairs], apply,
      lambda: global_step.assign_add(1))

