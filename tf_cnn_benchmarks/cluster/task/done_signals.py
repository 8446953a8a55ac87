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
    self._ops = {kind: [] for kind in KINDS}
    for job, index in role.serving_tasks():
      queue = done_queue('/job:%s/task:%d' % (job, index),
                         name='done_queue_%s%d' % (job, index))
      for kind, ops in self._ops.items():
        ops.append(signal_op(queue, kind, role.task_index))

  def arrive(self, sess, timeout_ms=DONE_TIMEOUT_MS):
    self._send(sess, ARRIVED, timeout_ms)

  def send(self, sess, timeout_ms=DONE_TIMEOUT_MS):
    self._send(sess, DONE, timeout_ms)

  def _send(self, sess, kind, timeout_ms):
    for op in self._ops[kind]:
      try:
        sess.run(op, options=deadlines.bounded(timeout_ms))
      except tf.errors.OpError:
        # Gone already: it will notice our absence by itself.
        pass


def client_labels(role):
  """Labels of the training tasks, by client index (progress board order)."""
  return [roles.task_label(job, i) for job, i in role.clients()]
