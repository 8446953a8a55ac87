"""How a client tells the serving tasks it has joined, and left, the cluster.

Every serving task (the ps tasks; the workers in distributed_all_reduce)
owns a signal queue of (kind, client index) pairs. A training task pushes
ARRIVED into every serving task's queue once its session exists, and DONE
as the last thing it does with the cluster, on success and on failure; a
serving task exits once every client is done or gone (serving_task.py).

Why ARRIVED: a serving task judges a silent client by TCP probes of its
port, and a refused port means "gone" only for a client known to have
started (before that it may just be late). Probes about a second apart can
miss a client's whole life: a trivial model starts, steps and may be killed
within two seconds. Its arrival is proof it started that no probe can miss.
"""

import tensorflow as tf

from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster import roles

tf1 = tf.compat.v1

DONE_QUEUE_NAME = 'cluster_done_queue'
DONE_TIMEOUT_MS = 5000
# Kinds of signal (the first element of each queued pair).
ARRIVED, DONE = 0, 1
KINDS = (ARRIVED, DONE)


class RefusedSignal(ValueError):
  """A signal no client of this cluster sends: an unknown kind or client
  index (anyone who reaches the server can push to its queue)."""


def read_signal(kind, index, labels_by_index):
  """(kind, client label) of a queued pair; RefusedSignal, saying why, for
  a kind outside KINDS or an index that is not a client's. Refused, not
  guessed at: a forged pair read as DONE would let a serving task leave a
  client that is still training."""
  kind, index = int(kind), int(index)
  if kind not in KINDS:
    raise RefusedSignal('kind %d is neither ARRIVED (%d) nor DONE (%d)' % (
        kind, ARRIVED, DONE))
  if index not in labels_by_index:
    raise RefusedSignal('client index %d is not one of this cluster\'s '
                        '(0-%d)' % (index, len(labels_by_index) - 1))
  return kind, labels_by_index[index]


def done_queue(device, name='done_queue'):
  """The queue a serving task on ``device`` reads its clients' signals
  from: int32 pairs (kind, client index).

  Every graph that names it must declare it identically (shared_name,
  dtype, shape, capacity): TensorFlow finds the one queue by shared_name.
  """
  with tf1.device(device):
    return tf1.FIFOQueue(-1, [tf.int32], shapes=[[2]],
                         shared_name=DONE_QUEUE_NAME, name=name)


def signal_op(queue, kind, client_index):
  """The op that pushes signal ``kind`` of client ``client_index``."""
  return queue.enqueue([tf.constant([kind, client_index], tf.int32)])


class DoneSignals:
  """This client's ARRIVED and DONE ops, one of each per serving task
  (built in its graph)."""

  def __init__(self, role):
    # {kind: [(the serving task's device, op)]}
    self._ops = {kind: [] for kind in KINDS}
    for job, index in role.serving_tasks():
      device = '/job:%s/task:%d' % (job, index)
      queue = done_queue(device, name='done_queue_%s%d' % (job, index))
      for kind, ops in self._ops.items():
        ops.append((device, signal_op(queue, kind, role.task_index)))

  def arrive(self, sess, timeout_ms=DONE_TIMEOUT_MS):
    self._send(sess, ARRIVED, timeout_ms)

  def send(self, sess, timeout_ms=DONE_TIMEOUT_MS, only=None, skip=None):
    """DONE to every serving task; ``only``/``skip``: a device, e.g. the
    board's: to the serving task it is on only, or to every other."""
    self._send(sess, DONE, timeout_ms, only, skip)

  def _send(self, sess, kind, timeout_ms, only=None, skip=None):
    """To every serving task at once, a thread each: one cut off, whose
    call waits out ``timeout_ms``, holds up no other's signal (one at a
    time, a cut-off ps0 used up a hurried exit's time and ps1 never heard
    its clients were done)."""
    deadlines.at_once([lambda op=op: _run_bounded(sess, op, timeout_ms)
                       for device, op in self._ops[kind]
                       if chosen(device, only, skip)], timeout_ms)


def chosen(task_device, only=None, skip=None):
  """Is the serving task at ``task_device`` ('/job:ps/task:0') one to
  signal: the one ``only`` (a device, e.g. the board's) is on, or any but
  the one ``skip`` is on; None: no such limit."""
  on = lambda device: (device + '/').startswith(task_device + '/')  # pylint: disable=unnecessary-lambda-assignment
  return (only is None or on(only)) and (skip is None or not on(skip))


def _run_bounded(sess, op, timeout_ms):
  try:
    sess.run(op, options=deadlines.bounded(timeout_ms))
  except tf.errors.OpError:
    # Gone already: it will notice our absence by itself.
    pass


def client_labels(role):
  """Labels of the training tasks, by client index (progress board order)."""
  return [roles.task_label(job, i) for job, i in role.clients()]
