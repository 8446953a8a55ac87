"""--freeze_when_forward_only: inference on a graph whose variables are
constants, as a deployed model would run.

The variables are initialised in a throw-away session, the graph is
converted (every variable read becomes a constant holding its value) and
imported into a new graph; the run then times that graph.
"""

import dataclasses

import tensorflow as tf

from tf_cnn_benchmarks.config import run_mode

tf1 = tf.compat.v1


def wanted(rc):
  return (rc.mode is run_mode.RunMode.FORWARD_ONLY and
          rc.params.freeze_when_forward_only)


def _name(t):
  return t.name.split(':')[0]


def freeze(built, config):
  """A BuiltGraph like ``built`` whose graph holds no variables."""
  # What the run fetches or initialises, by name in the new graph.
  with built.graph.as_default():
    # The global step's value (a read op) becomes a constant too.
    step_value = built.global_step.value()
  tensors = {'total_loss': built.total_loss, 'base_loss': built.base_loss,
             'top_1_correct': built.top_1_correct,
             'top_5_correct': built.top_5_correct,
             'global_step': step_value}
  ops = {'step_op': built.step_op, 'input_step': built.input_step}
  # Iterator initialisers stay; variable initialisers (synthetic data's)
  # go: their variables become constants holding the values drawn here.
  inits = [op for op in built.input_init_ops
           if op.type not in ('Assign', 'AssignVariableOp')]
  keep = ([_name(t) for t in tensors.values() if t is not None] +
          [_name(o) for o in ops.values()] + [_name(o) for o in inits])
  with tf1.Session(graph=built.graph, config=config) as sess:
    sess.run(built.init_ops)
    sess.run(built.input_init_ops)
    sess.run(built.post_init_ops)
    graph_def = tf1.graph_util.convert_variables_to_constants(
        sess, built.graph.as_graph_def(), keep)
  graph = tf.Graph()
  with graph.as_default():
    tf1.import_graph_def(graph_def, name='')

  def new(x):
    if x is None:
      return None
    return (graph.get_tensor_by_name(x.name) if isinstance(x, tf.Tensor)
            else graph.get_operation_by_name(x.name))
  changes = {k: new(v) for k, v in tensors.items()}
  changes.update({k: new(v) for k, v in ops.items()})
  return dataclasses.replace(
      built, graph=graph, init_ops=[], post_init_ops=[],
      input_init_ops=[new(o) for o in inits], saver=None, **changes)
