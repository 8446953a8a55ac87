"""A secondary error whose cause is a *frozen* peer names that peer.

A stopped process's kernel still accepts connections, so the TCP probes
call it fine and its board note never comes; a call to it ends by its RPC
deadline. root_cause.find asks the peers for a gRPC answer beside its
rounds, and a silent one once more (the soak's seeds 7138 and 7158
blamed the task itself, "Operation timed out."). Here the frozen peer is
a listening socket nobody accepts on, which is what a SIGSTOPped server
is to its callers; the end-to-end case is
test_faults_mid_run.py::test_a_board_host_frozen_between_steps_is_named_as_the_stall.
"""

import socket
import threading

import pytest
import tensorflow as tf

from tf_cnn_benchmarks.cluster.task import progress_board
from tf_cnn_benchmarks.cluster.watch import root_cause
from tf_cnn_benchmarks.liveness import endings

tf1 = tf.compat.v1
_OWN_ERROR = tf.errors.DeadlineExceededError(None, None,
                                             'Operation timed out.')


@pytest.fixture
def board_session():
  """A real two-client board in a local session, every note empty."""
  graph = tf.Graph()
  with graph.as_default():
    board = progress_board.ProgressBoard('/cpu:0', 2, 1)
  with tf1.Session(graph=graph) as sess:
    sess.run(board.initializer)
    yield board, sess


@pytest.fixture
def frozen_listener():
  """(address, thaw): a port that accepts connections (the kernel's
  backlog) and answers nothing until ``thaw()``, after which every
  connection is accepted and closed at once (a server that answers, if
  only with an error)."""
  listener = socket.socket()
  listener.bind(('127.0.0.1', 0))
  listener.listen(16)
  stop = threading.Event()

  def answer():
    listener.settimeout(0.1)
    while not stop.is_set():
      try:
        connection, _ = listener.accept()
      except OSError:
        continue
      connection.close()

  def thaw():
    threading.Thread(target=answer, daemon=True).start()
  yield '127.0.0.1:%d' % listener.getsockname()[1], thaw
  stop.set()
  listener.close()


@pytest.mark.timeout(60)
def test_a_peer_frozen_throughout_the_wait_is_named_stalled(
    board_session, frozen_listener):
  board, sess = board_session
  address, _ = frozen_listener
  found = root_cause.find(sess, board, ['worker0', 'worker1'], 1,
                          {'worker0': address}, _OWN_ERROR)
  assert found is not None, 'a frozen peer was not named'
  assert found.status == endings.STALLED
  assert found.failure['task'] == 'worker0'
  assert 'frozen' in found.failure['message']
  assert 'Operation timed out.' in found.failure['message']


@pytest.mark.timeout(60)
def test_a_peer_that_answers_by_the_end_of_the_wait_is_not_named(
    board_session, frozen_listener):
  """Silent at the first ask only (a live server slow once on a loaded
  host): the error stays this task's own, as before."""
  board, sess = board_session
  address, thaw = frozen_listener
  # After the first ask has timed out (2 s), before the last one.
  threading.Timer(root_cause.PEER_FAILURE_WAIT_SECONDS * 0.75, thaw).start()
  found = root_cause.find(sess, board, ['worker0', 'worker1'], 1,
                          {'worker0': address}, _OWN_ERROR)
  assert found is None, found
