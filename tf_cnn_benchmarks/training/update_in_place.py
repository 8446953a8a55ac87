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
  handles = [[_handle(var, graph) for _, var in pairs]
             for pairs in tower_grads]
  readers = {}
  for pairs, tower_handles in zip(tower_grads, handles):
    for (grad, _), handle in zip(pairs, tower_handles):
      if grad is not None and handle is not None and (
          handle.ref() not in readers):
        readers[handle.ref()] = _readers(handle, needed)
  before = _ancestors_among(
      set().union(*readers.values()) if readers else set(), needed)
  gated = []
  for pairs, tower_handles in zip(tower_grads, handles):
    tower = []
    for (grad, var), handle in zip(pairs, tower_handles):
      if grad is None or handle is None:
        tower.append((grad, var))
        continue
      # Readers the gradient already waits for need no edge. An edge from
      # one anyway would keep grappler from fusing its op with the next
      # (a control edge blocks a fusion): inception3's batch norms, whose
      # gradients take their forward op's outputs, lost the fusion with
      # their ReLU in 49 of 96 layers.
      waits = before(_op(grad))
      tower.append((_after(grad, sorted(
          (op for op in readers[handle.ref()] if op not in waits),
          key=lambda o: o.name)), var))
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


def _ancestors_among(candidates, needed):
  """A function: op -> the ``candidates`` it waits for (itself included),
  through the ``needed`` ops.

  One pass over the graph for all gradients: each op's set is a bit mask
  (a Python int, one bit per candidate) made from its inputs' masks.
  """
  ordered = sorted(candidates, key=lambda o: o.name)
  bit = {op: 1 << i for i, op in enumerate(ordered)}
  masks = {}

  def mask(root):
    stack = [root]
    visiting = set()
    while stack:
      op = stack[-1]
      if op in masks:
        stack.pop()
        continue
      parents = [p for p in [t.op for t in op.inputs] + list(
          op.control_inputs) if p in needed]
      # A tf.compat.v1 while loop is a cycle: a parent still being
      # visited adds nothing.
      todo = [p for p in parents if p not in masks and p not in visiting]
      if todo and op not in visiting:
        visiting.add(op)
        stack.extend(todo)
        continue
      value = bit.get(op, 0)
      for parent in parents:
        value |= masks.get(parent, 0)
      masks[op] = value
      visiting.discard(op)
      stack.pop()
    return masks[root]

  def waits_for(op):
    value = mask(op)
    return {o for o in ordered if value & bit[o]}
  return waits_for


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
