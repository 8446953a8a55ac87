"""How a client tells the serving tasks it has left the cluster.

Every serving task (the ps tasks; the workers in distributed_all_reduce)
owns a "done" queue. A training task pushes its index into every serving
task's queue as the last thing it does with the cluster, on success and on
failure; a serving task exits once every client is done or gone
(serving_task.py).
"""

import tensorflow as tf

from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster import roles

tf1 = tf.compat.v1

DONE_QUEUE_NAME = 'cluster_done_queue'
DONE_TIMEOUT_MS = 5000


def done_queue(device, name='done_queue'):
  """The queue a serving task on ``device`` reads "done" signals from.

  Every graph that names it must declare it identically (shared_name,
  dtype, shape, capacity): TensorFlow finds the one queue by shared_name.
  """
  with tf1.device(device):
    return tf1.FIFOQueue(-1, [tf.int32], shapes=[[]],
                         shared_name=DONE_QUEUE_NAME, name=name)


class DoneSignals:
  """This client's "done" ops, one per serving task (built in its graph)."""

  def __init__(self, role):
    self._ops = []
    for job, index in role.serving_tasks():
      queue = done_queue('/job:%s/task:%d' % (job, index),
                         name='done_queue_%s%d' % (job, index))
      self._ops.append(queue.enqueue([role.task_index]))

  def send(self, sess, timeout_ms=DONE_TIMEOUT_MS):
    for op in self._ops:
      try:
        sess.run(op, options=deadlines.bounded(timeout_ms))
      except tf.errors.OpError:
        # Gone already: it will notice our absence by itself.
        pass


def client_labels(role):
  """Labels of the training tasks, by client index (progress board order)."""
  return [roles.task_label(job, i) for job, i in role.clients()]
