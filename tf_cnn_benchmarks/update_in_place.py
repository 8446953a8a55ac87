"""Each variable's update waits for the ops that read it this step.

A resource variable promises every read a snapshot: when an update kernel
finds the variable's buffer still shared with a read's output (an op that
uses the weights has not run yet), it copies the whole variable first and
writes the copy (TensorFlow's copy-on-write in PrepareToUpdateVariable).
Nothing orders an update after the *users* of the variable's reads: the
update of a layer's weights waits for their gradient, but the input
gradient of the same layer (dy . W^T) reads W too and may still be queued.
For the trivial model that copy was the logits' 16 MB every step: in a
perf profile of 1500 synthetic steps the process took 26.1k CPU samples
with it and 21.9k without (the original tool, whose reference variables
update in place while readers race them: 22.7k). PERFORMANCE.md has the
profile.

gate() hands each gradient to the optimizer only after every op of the
step that holds a read of its variable has run, so the update finds the
buffer unshared and writes in place. The values computed do not change:
an update already comes after the reads its snapshot semantics protect.
Both engines use it: on a tf.compat.v1 graph, and inside the tf2 engine's
tf.function (whose automatic control dependencies order an update after
the read op itself, not after the ops that use what it read).
"""

import tensorflow as tf

tf1 = tf.compat.v1

# Ops that pass their input buffer through: their users hold the read too.
_FORWARDING = frozenset(['Identity', 'Snapshot'])


def gate(tower_grads, losses):
  """tower_grads with every gradient gated on its variable's readers.

  tower_grads[i] = [(grad, var)] of tower i; losses: the loss tensors the
  step computes. Only ops the step runs anyway to compute those and the
  gradients may gate it: a control edge from any other reader (the input
  gradient of the first layer, which tf.gradients builds and nothing
  needs; an evaluation tower) would make the step run it. A variable
  several towers share (parameter_server) waits for every tower's readers.
  """
  grads = [g for pairs in tower_grads for g, _ in pairs if g is not None]
  if not grads:
    return tower_grads
  graph = _op(grads[0]).graph
  needed = _upstream([_op(t) for t in grads + list(losses)])
  readers = {}
  gated = []
  for pairs in tower_grads:
    tower = []
    for grad, var in pairs:
      handle = _handle(var, graph)
      if grad is None or handle is None:
        tower.append((grad, var))
        continue
      if handle.ref() not in readers:
        readers[handle.ref()] = sorted(_readers(handle, needed),
                                       key=lambda o: o.name)
      tower.append((_after(grad, readers[handle.ref()]), var))
    gated.append(tower)
  return gated


def _handle(var, graph):
  """``var``'s handle as the ops of ``graph`` take it: the handle itself in
  a tf.compat.v1 graph; in a tf.function (the tf2 engine), the placeholder
  that captures it. None if the graph never reads it."""
  handle = var.handle
  if getattr(handle, 'graph', None) is graph:
    return handle
  for external, internal in getattr(graph, 'captures', ()):
    if external is handle:
      return internal
  return None


def _op(tensor):
  return (tensor.values if isinstance(tensor, tf.IndexedSlices)
          else tensor).op


def _upstream(ops):
  """``ops`` and every op they wait for (data and control edges)."""
  seen, pending = set(ops), list(ops)
  while pending:
    op = pending.pop()
    for parent in [t.op for t in op.inputs] + list(op.control_inputs):
      if parent not in seen:
        seen.add(parent)
        pending.append(parent)
  return seen


def _readers(handle, needed):
  """The ``needed`` ops that take a read of the variable behind ``handle``
  (also through ops that forward the read's buffer)."""
  found = set()
  pending = [op for op in handle.consumers() if op.type == 'ReadVariableOp']
  while pending:
    op = pending.pop()
    for tensor in op.outputs:
      for user in tensor.consumers():
        if user in needed and user not in found:
          found.add(user)
          if user.type in _FORWARDING:
            pending.append(user)
  return found


def _after(grad, ops):
  """``grad`` unchanged, available only once ``ops`` have run (an identity
  on the gradient's own device, which copies nothing)."""
  if not ops:
    return grad
  if isinstance(grad, tf.IndexedSlices):
    return tf.IndexedSlices(_after(grad.values, ops), grad.indices,
                            grad.dense_shape)
  # Named under the gradient's own op, so the step's profile still files
  # it as a gradient (benchmarks/step_profile.py).
  with tf1.device(grad.device), tf.control_dependencies(ops), \
      tf1.name_scope(grad.op.name + '/'):
    return tf.identity(grad, name='after_reads')
