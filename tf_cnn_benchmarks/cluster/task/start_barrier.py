"""The workers' start barrier: generation-numbered, and it names who is late.

The barrier is an int64 vector on a host task (ps 0, or worker 0 when there
is no ps): entry i is the last barrier generation worker i reached. Each
worker writes its own entry and polls the vector, so a wait that runs out
of --startup_timeout can name exactly the workers that never arrived.
"""

import time

import tensorflow as tf

from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster.task import progress_board
from tf_cnn_benchmarks.cluster.watch.reachability import ClusterWaitTimeout

tf1 = tf.compat.v1

BARRIER_NAME = 'cluster_start_barrier'
# Poll period of barrier waits: short next to a TensorFlow start-up.
_POLL_SECONDS = 0.05


class StartBarrier:
  """See the module docstring."""

  def __init__(self, device, num_workers, task_index):
    self.num_workers = num_workers
    with tf1.device(device):
      self.arrivals = progress_board.chief_initialised_vector(
          tf.zeros([num_workers], tf.int64), BARRIER_NAME)
      self._generation = tf1.placeholder(tf.int64, [], name='barrier_gen')
      self._arrive = tf1.scatter_update(
          self.arrivals, [task_index], tf.reshape(self._generation, [1]))
      self._read = tf.identity(self.arrivals.read_value())
      self._exists = tf1.is_variable_initialized(self.arrivals)
    self.initializer = self.arrivals.initializer

  def wait_until_created(self, sess, timeout):
    deadline = time.monotonic() + timeout
    while not sess.run(self._exists,
                       options=deadlines.bounded(deadlines.RPC_TIMEOUT_MS)):
      if time.monotonic() >= deadline:
        raise ClusterWaitTimeout(
            'The chief (worker0) did not initialise the cluster within '
            '%.0f s (what start-up had left of --startup_timeout); is it '
            'running?' % timeout,
            ['worker0'])
      time.sleep(_POLL_SECONDS)

  def arrive_and_wait(self, sess, generation, timeout, what):
    options = deadlines.bounded(deadlines.RPC_TIMEOUT_MS)
    sess.run(self._arrive, {self._generation: generation}, options=options)
    deadline = time.monotonic() + timeout
    while True:
      arrivals = sess.run(self._read, options=options)
      missing = ['worker%d' % i for i, g in enumerate(arrivals)
                 if g < generation]
      if not missing:
        return
      if time.monotonic() >= deadline:
        raise ClusterWaitTimeout(
            '%s never reached the %s barrier within %.0f s (what start-up '
            'had left of --startup_timeout); %d of %d workers did.' % (
                ', '.join(missing), what, timeout,
                self.num_workers - len(missing), self.num_workers), missing)
      time.sleep(_POLL_SECONDS)
