"""Variables are updated in place: no update waits on a copy of its variable.

A resource variable's update copies the variable when a read of it is still
held by an op that has not run (training/update_in_place.py). These tests look
at the graph (every update comes after every op of the step that reads its
variable) and at the kernels' own memory accounting in a traced step (an update
that copied allocated the variable's size).
"""

import pytest
import tensorflow as tf

from tests.driver_helpers import build_graph
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.training import weight_decay

tf1 = tf.compat.v1

MODES = [
    dict(),
    dict(num_gpus=2, variable_update='parameter_server'),
    dict(num_gpus=2, variable_update='replicated'),
    dict(optimizer='momentum'),
]


def _build(**overrides):
  settings = dict(model='trivial', data_name='imagenet', batch_size=8)
  settings.update(overrides)
  return build_graph(**settings)


def _updates(graph):
  """The updates of variables (not the weight decay's sums, which use
  the update kernel on a scratch buffer of the step's own)."""
  return [op for op in graph.get_operations()
          if op.type.startswith('ResourceApply') and
          weight_decay.SCOPE not in op.name.split('/')]


def _upstream(*ops):
  """Every op ``ops`` wait for, through data and control edges."""
  seen, pending = set(), list(ops)
  while pending:
    current = pending.pop()
    for parent in [t.op for t in current.inputs] + list(
        current.control_inputs):
      if parent not in seen:
        seen.add(parent)
        pending.append(parent)
  return seen


def _assert_updates_wait_for_readers(updates, step):
  """Every update in ``updates`` waits for each op in ``step`` that uses a
  read of its variable (through its handle: a VarHandleOp in a v1 graph, a
  captured placeholder in a tf.function)."""
  assert updates
  for update in updates:
    handle = update.inputs[0]
    while handle.op.type == 'Identity':
      handle = handle.op.inputs[0]
    readers = {user for read in handle.consumers()
               if read.type == 'ReadVariableOp'
               for out in read.outputs for user in out.consumers()
               if user in step and user is not update}
    assert readers, update.name
    missing = readers - _upstream(update)
    assert not missing, '%s may run before %s' % (
        update.name, sorted(op.name for op in missing))


@pytest.mark.parametrize('mode', MODES, ids=lambda m: '-'.join(
    '%s' % v for v in m.values()) or 'one_tower')
def test_every_update_waits_for_the_readers_of_its_variable(mode):
  _, _, built = _build(**mode)
  step_op = getattr(built.step_op, 'op', built.step_op)
  _assert_updates_wait_for_readers(_updates(built.graph),
                                   _upstream(step_op) | {step_op})


@pytest.mark.parametrize('optimizer', ['sgd', 'momentum'])
def test_the_tf2_engine_s_updates_wait_for_their_readers_too(optimizer):
  # Inside a tf.function the automatic control dependencies order an
  # update after its variable's read op only, not after the read's users.
  from tf_cnn_benchmarks.engine_tf2 import strategies, train_step
  from tf_cnn_benchmarks.run import driver
  params, rc, _ = _build(engine='tf2', optimizer=optimizer)
  rc, source = driver.open_input_source(params, rc)
  trainer = train_step.Trainer(rc, strategies.choose(rc), source)
  graph = trainer._step.get_concrete_function(trainer._iterator).graph  # pylint: disable=protected-access
  outputs = [t.op for t in graph.outputs] + list(graph.control_outputs)
  _assert_updates_wait_for_readers(_updates(graph), _upstream(*outputs))


@pytest.mark.parametrize('mode', MODES[:3], ids=['one_tower', 'ps2',
                                                  'replicated2'])
def test_no_update_allocates_a_copy_of_its_variable(mode):
  params, rc, built = _build(**mode)
  config = run_config.session_config(params, rc)
  copies = []
  with tf1.Session(graph=built.graph, config=config) as sess:
    sess.run(built.init_ops)
    sess.run(built.input_init_ops)
    sess.run(built.post_init_ops)
    # The first update of a variable initialised from a constant copies it
    # once (the constant keeps the buffer): that is initialisation, as the
    # harness's warm-up steps are.
    sess.run(built.step_op)
    for _ in range(6):
      metadata = tf1.RunMetadata()
      sess.run(built.step_op, run_metadata=metadata, options=tf1.RunOptions(
          trace_level=tf1.RunOptions.FULL_TRACE))
      for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
          allocated = sum(m.total_bytes for m in node.memory)
          if 'ResourceApply' in node.timeline_label and allocated:
            copies.append((node.node_name, allocated))
  assert not copies, copies


def test_gating_adds_no_work_to_the_step():
  # tf.gradients also builds the first convolution's input gradient,
  # which nothing needs; a gate waiting for every reader of that kernel
  # would make the step compute it.
  _, _, built = _build(model='lenet')
  step_op = getattr(built.step_op, 'op', built.step_op)
  step = [op.type for op in _upstream(step_op)]
  assert step.count('Conv2D') == 2
  assert step.count('Conv2DBackpropInput') == 1


@pytest.mark.parametrize('model', ['resnet20', 'alexnet'])
def test_a_gate_waits_only_for_readers_not_already_before_it(model):
  # A control edge from the forward batch norm (whose outputs its gradient
  # takes) or the forward Conv2D/MatMul (before the weight gradient
  # through the loss) orders nothing new, and it keeps grappler from
  # fusing that op with its ReLU: the original's graph fuses all of them.
  data = 'cifar10' if model == 'resnet20' else 'imagenet'
  _, _, built = _build(model=model, data_name=data)
  gates = [op for op in built.graph.get_operations()
           if op.name.endswith('/after_reads')]
  assert gates
  redundant = []
  for gate in gates:
    before = _upstream(gate.inputs[0].op) | {gate.inputs[0].op}
    redundant += [(gate.name, op.name) for op in gate.control_inputs
                  if op in before]
  assert not redundant
  forward_norms = [op for op in built.graph.get_operations()
                   if op.type == 'FusedBatchNormV3']
  assert all(not any(user.name.endswith('/after_reads')
                     for user in op._control_outputs)  # pylint: disable=protected-access
             for op in forward_norms)
