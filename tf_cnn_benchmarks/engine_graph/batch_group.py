"""--batch_group_size=N: N training steps per session.run call.

How: the ops one step runs are copied N - 1 times into the same graph
(GraphDef import), each copy reading and updating the *same* variables,
iterators and other resources as the original (their handles are mapped to
the original handle ops, never copied), and starting only after the
previous copy's update (a control dependency on every op that touches a
resource). One session.run of the last copy's step then runs N steps in
order, with one Python round trip instead of N.

Why a copy and not a tf.while_loop: the model is built once by code that
creates variables and optimizer slots as it goes; a loop body would have to
build everything again with variable reuse in every variable manager. A
copy of the finished step needs none of that, and works for every local
variable_update mode and both synthetic and real input (the copy's
IteratorGetNext pulls the next batch from the same iterator).

Timing: the driver times each session.run and records each of the group's N
steps with the group's wall time / N (and its own loss), so per-step lists
keep their length and ``total images/sec`` keeps its definition.
"""

import time
from typing import List

import tensorflow as tf

from tf_cnn_benchmarks import contracts
from tf_cnn_benchmarks.measure import flops

tf1 = tf.compat.v1

_BARRIER = 'batch_group_barrier'
# Outputs that are handles to state: copies must share them, not recreate.
_HANDLE_DTYPES = (tf.resource, tf.variant)


def _is_handle_source(op):
  """An op without data inputs whose outputs all are handles to state
  (VarHandleOp, IteratorV2, tables ...)."""
  if op.inputs or not op.outputs:
    return False
  return all(t.dtype in _HANDLE_DTYPES for t in op.outputs)


def _touches_state(node, handle_names):
  """Does this GraphDef node take a handle as a data input?"""
  for name in node.input:
    if not name.startswith('^') and name.split(':')[0] in handle_names:
      return True
  return False


def _fetch_names(fetches):
  """Names to ask import_graph_def for: tensor names, or op names (ops)."""
  return {key: value.name for key, value in fetches.items()}


def _step_graph_def(graph, fetches):
  """(GraphDef of the ops one step runs, names of the handle sources)."""
  ops = flops.executed_ops(fetches)
  names = {op.name for op in ops}
  full = graph.as_graph_def()
  sub = tf1.GraphDef()
  sub.versions.CopyFrom(full.versions)
  sub.library.CopyFrom(full.library)
  sub.node.extend(n for n in full.node if n.name in names)
  handles = {op.name for op in ops if _is_handle_source(op)}
  return sub, handles


def _copy_def(sub, handles, copy_index):
  """The step's GraphDef minus its handle sources, made to wait for the
  barrier wherever it touches state, with fresh random seeds."""
  out = tf1.GraphDef()
  out.versions.CopyFrom(sub.versions)
  out.library.CopyFrom(sub.library)
  out.node.add(name=_BARRIER, op='NoOp')  # remapped to the real barrier
  for node in sub.node:
    if node.name in handles:
      continue
    new = out.node.add()
    new.CopyFrom(node)
    # Colocation names point at the original handle ops, which the copy
    # does not contain; the device each op got at build time stays.
    new.attr.pop('_class', None)
    if _touches_state(node, handles):
      new.input.append('^' + _BARRIER)
    seeded = 'seed' in new.attr and 'seed2' in new.attr and (
        new.attr['seed'].i or new.attr['seed2'].i)
    if seeded:
      # Same seeds would repeat the original's dropout masks in every copy.
      new.attr['seed2'].i = (new.attr['seed2'].i + 7919 * copy_index) % (
          2 ** 31)
  return out


def chain(graph, fetches, n):
  """Returns fetches that run ``n`` steps per session.run.

  ``fetches``: {'step': op, 'loss': tensor, ...} of one step. The result has
  the same keys; 'step' is the last copy's step op, every other key a list
  of the n copies' tensors (in step order). n = 1 returns ``fetches``
  unchanged. Must be called before the graph is finalized.
  """
  if n <= 1:
    return fetches
  sub, handles = _step_graph_def(graph, fetches)
  names = _fetch_names(fetches)
  handle_map = {}
  for name in handles:
    for t in graph.get_operation_by_name(name).outputs:
      handle_map[t.name] = t
  grouped = {k: [v] for k, v in fetches.items()}
  previous_step = fetches['step']
  with graph.as_default():
    for i in range(1, n):
      with tf.control_dependencies([previous_step]):
        # A tensor whose op runs after the previous step: the barrier.
        ready = tf.constant(0, name='batch_group_ready_%d' % i)
      input_map = dict(handle_map)
      input_map['^' + _BARRIER] = ready
      returned = tf1.import_graph_def(
          _copy_def(sub, handles, i), input_map=input_map,
          return_elements=[names[k] for k in fetches],
          name='batch_group_%d' % i)
      for key, element in zip(fetches, returned):
        grouped[key].append(element)
      previous_step = grouped['step'][-1]
  grouped['step'] = previous_step
  return grouped


class SessionStepRunner:
  """The graph engine's contracts.StepRunner: runs one group per
  session.run and hands the steps out one at a time.

  ``step()`` returns the next step's StepResult, calling session.run only
  when the current group is used up; each step of a group is charged the
  group's wall time / n.
  """

  def __init__(self, run, grouped_fetches, n):
    self._run = run  # run(fetches) -> values, e.g. a bound session.run
    self._fetches = grouped_fetches
    self._n = n
    self._pending: List[contracts.StepResult] = []

  def step(self, extra=None):
    """The next step; ``extra`` ({name: fetch}) is fetched with it (plain
    steps only: a group's copies fetch only what they were built with)."""
    if self._n == 1:  # the plain path: no lists, nothing buffered
      fetches = dict(self._fetches, **extra) if extra else self._fetches
      start = time.perf_counter()
      values = self._run(fetches)
      return contracts.StepResult(time.perf_counter() - start, values)
    assert not extra, 'a group of steps fetches only what it was built with'

    if not self._pending:
      start = time.perf_counter()
      values = self._run(self._fetches)
      seconds = (time.perf_counter() - start) / self._n
      for i in range(self._n):
        self._pending.append(contracts.StepResult(seconds, {
            k: v if k == 'step' else v[i] for k, v in values.items()}))
    return self._pending.pop(0)
