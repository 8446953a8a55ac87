"""A serving task takes only its own clients' signals, and no silent task
holds up a client's signals or its exit note for more than one bound.

Its done queue is a TensorFlow queue on its server: anyone who reaches the
server can push to it. A pair of an unknown kind or client index was once
read as DONE of whichever client, so a forged signal made a ps leave a
worker that was still training. Here a real ps serves one worker that never
comes, and this test's own session pushes to its queue.
"""

import inspect
import json
import subprocess
import sys
import threading
import time
import types

import pytest
import tensorflow as tf

from tests.cluster import helpers
from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.task import done_signals

pytestmark = pytest.mark.cluster
tf1 = tf.compat.v1


def test_read_signal_names_the_client_or_says_why_not():
  labels = {0: 'worker0', 1: 'worker1'}
  assert done_signals.read_signal(1, 1, labels) == (done_signals.DONE,
                                                    'worker1')
  assert done_signals.read_signal(0, 0, labels) == (done_signals.ARRIVED,
                                                    'worker0')
  with pytest.raises(done_signals.RefusedSignal, match='kind 7'):
    done_signals.read_signal(7, 0, labels)
  with pytest.raises(done_signals.RefusedSignal, match='client index 5'):
    done_signals.read_signal(done_signals.DONE, 5, labels)


def _push(ps_address, pairs):
  """Pushes (kind, index) pairs into the ps's done queue, as a client's
  session would."""
  graph = tf.Graph()
  with graph.as_default():
    queue = done_signals.done_queue('/job:ps/task:0')
    pushes = [queue.enqueue([tf.constant(pair, tf.int32)]) for pair in pairs]
  with tf1.Session('grpc://' + ps_address, graph=graph) as sess:
    for push in pushes:
      sess.run(push, options=tf1.RunOptions(timeout_in_ms=20000))


def _push_in_a_child(ps_address, pairs):
  """_push in a process of its own, bounded: a session to a ps that exits
  under it (a forged signal read as DONE, as a breakage makes it) can hang
  in its close, and the test must then fail, not hang (the mutation check
  once waited out its 600 s here)."""
  subprocess.run(
      [sys.executable, '-c', 'import json, sys; from tests.cluster import '
       'test_done_signals as t; t._push(sys.argv[1], json.loads(sys.argv[2]))',
       ps_address, json.dumps(list(pairs))],
      cwd=helpers.REPO, timeout=90, check=True)


def test_a_forged_done_signal_is_refused_and_the_real_one_ends_the_ps(
    tmp_path):
  ps_address = '127.0.0.1:%d' % helpers.free_port()
  worker_address = '127.0.0.1:%d' % helpers.free_port()
  log = tmp_path / 'ps0.log'
  ps = helpers.start(
      [helpers.SCRIPT, '--job_name=ps', '--task_index=0',
       '--ps_hosts=' + ps_address, '--worker_hosts=' + worker_address,
       '--variable_update=parameter_server'] +
      helpers.tiny_flags(str(tmp_path / 'results'), startup_timeout=120),
      log_path=str(log))
  try:
    helpers.wait_for(lambda: 'serving at' in helpers.read(log), 60,
                     'the ps to serve')
    # An unknown kind for worker0 (read as its DONE before), and DONE of a
    # client index the cluster does not have.
    _push_in_a_child(ps_address, [(7, 0), (done_signals.DONE, 5)])
    helpers.wait_for(lambda: helpers.read(log).count('refused a signal') == 2,
                     30, 'two refusals in ' + helpers.read(log))
    time.sleep(2)
    assert ps.poll() is None, helpers.read(log)
    assert 'is done (1 of 1)' not in helpers.read(log)
    text = helpers.read(log)
    assert 'kind 7 is neither ARRIVED' in text, text
    assert 'client index 5 is not one of' in text, text
    _push_in_a_child(ps_address, [(done_signals.DONE, 0)])
    assert ps.wait(timeout=30) == 0, helpers.read(log)
    assert 'worker0 is done (1 of 1)' in helpers.read(log)
  finally:
    helpers.kill([ps])


class _CutOffSession:
  """Runs ops as a session would, except that an op on ps0 waits out its
  deadline, as a call to a task behind a partition does."""

  def __init__(self):
    self.sent = []
    self.lock = threading.Lock()

  def run(self, op, options=None):
    # The queue's task: where the signal goes.
    device = op.inputs[0].device.split('/device:')[0]
    if device.startswith('/job:ps/task:0'):
      time.sleep(options.timeout_in_ms / 1000.0)
      raise tf.errors.DeadlineExceededError(None, None, 'cut off')
    with self.lock:
      self.sent.append((device, time.monotonic()))


def test_a_cut_off_serving_task_holds_up_no_other_done_signal():
  """The seed-7008 soak miss: a worker leaving in a hurry sent done to the
  serving tasks one at a time, so a cut-off ps0 used up its exit's time
  and ps1, ps2 never heard it."""
  role = roles.ClusterRole(
      jobs={'ps': ('127.0.0.1:1', '127.0.0.1:2', '127.0.0.1:3'),
            'worker': ('127.0.0.1:4',)},
      job_name='worker', task_index=0, protocol='grpc',
      variable_update='parameter_server', cross_replica_sync=True)
  with tf.Graph().as_default():
    signals = done_signals.DoneSignals(role)
  sess = _CutOffSession()
  started = time.monotonic()
  signals.send(sess, timeout_ms=3000)
  assert sorted(device for device, _ in sess.sent) == [
      '/job:ps/task:1', '/job:ps/task:2']
  assert all(at - started < 1.0 for _, at in sess.sent), sess.sent
  board = '/job:ps/task:0/device:CPU:0'
  sess = _CutOffSession()
  signals.send(sess, timeout_ms=100, skip=board)
  assert sorted(device for device, _ in sess.sent) == [
      '/job:ps/task:1', '/job:ps/task:2']
  sess = _CutOffSession()
  signals.send(sess, timeout_ms=100, only='/job:ps/task:1/device:CPU:0')
  assert [device for device, _ in sess.sent] == ['/job:ps/task:1']


def test_both_engines_senders_take_what_a_hurried_exit_passes():
  """runtime._leave (the graph engine's and the tf2 coordinator's) hands
  either sender only= and skip=; the tf2 one once lacked them, and its
  coordinator's hurried exit raised before saying done (soak seed 7022)."""
  from tf_cnn_benchmarks.cluster.task import tf2_runtime  # pylint: disable=g-import-not-at-top
  senders = (done_signals.DoneSignals,
             tf2_runtime._DoneSenders)  # pylint: disable=protected-access
  for sender in senders:
    parameters = inspect.signature(sender.send).parameters
    assert {'sess', 'timeout_ms', 'only', 'skip'} <= set(parameters), sender
  assert done_signals.chosen('/job:ps/task:1')
  assert done_signals.chosen('/job:ps/task:1',
                             only='/job:ps/task:1/device:CPU:0')
  assert not done_signals.chosen('/job:ps/task:1', only='/job:ps/task:10')
  assert not done_signals.chosen('/job:ps/task:1', skip='/job:ps/task:1')
  assert done_signals.chosen('/job:ps/task:1',
                             skip='/job:ps/task:0/device:CPU:0')


def test_calls_at_once_share_one_deadline():
  """Three calls that never return (a signal's first run on a frozen task
  registers its graph there with no deadline) cost one bound, not three:
  each thread was once waited for in turn, its own second past the call's
  deadline."""
  never = threading.Event()
  started = time.monotonic()
  finished = deadlines.at_once([never.wait] * 3, timeout_ms=500)
  took = time.monotonic() - started
  never.set()
  assert not finished
  # One bound is 1.5 s; waiting in turn would take 4.5 s.
  assert 1.4 < took < 3.0, took
  assert deadlines.at_once([lambda: None] * 3, timeout_ms=500)


class _SlowBoard:
  """A board whose first post waits for ``release`` (until then, a host
  that never takes the note) or ``seconds``, recording each note as it
  lands; later posts land at once."""

  def __init__(self, seconds=None):
    self.release = threading.Event()
    self.seconds = seconds
    self.landed = []
    self.calls = 0

  def post_note(self, sess, index, note, timeout_ms):
    del sess, timeout_ms
    self.calls += 1
    if self.calls == 1:
      self.release.wait(self.seconds)
    self.landed.append((index, note))


def _leaving_task(board):
  return types.SimpleNamespace(board=board, client_index=1,
                               _note_lock=threading.Lock())


@pytest.mark.timeout(15)
def test_an_exit_note_the_board_never_takes_holds_up_nobody(monkeypatch):
  """_leave_note's post is often its session's first write to the board;
  a board host that never answers it (no deadline on the registration)
  held the task until the stall end, or for good with --stall_timeout=0.
  It waits one bound, then the task goes on leaving; a note posted in
  time is on the board when it returns (done to the board's host follows
  it), and a later note never lands before an earlier one still on its
  way."""
  from tf_cnn_benchmarks.cluster.task import runtime  # pylint: disable=g-import-not-at-top
  leave_note = runtime.ClusterRuntime._leave_note  # pylint: disable=protected-access
  monkeypatch.setattr(deadlines, 'RPC_TIMEOUT_MS', 300)
  frozen = _SlowBoard()
  task = _leaving_task(frozen)
  started = time.monotonic()
  assert not leave_note(task, None, {'status': 'failed', 'provisional': True})
  assert time.monotonic() - started < 3.0
  assert not leave_note(task, None, {'status': 'failed'})
  frozen.release.set()  # the host answers at last: both land, in order
  waited = time.monotonic()
  while len(frozen.landed) < 2 and time.monotonic() - waited < 5:
    time.sleep(0.05)
  assert frozen.landed == [(1, {'status': 'failed', 'provisional': True}),
                           (1, {'status': 'failed'})]
  slow = _SlowBoard(seconds=0.3)
  assert leave_note(_leaving_task(slow), None, {'status': 'ok'})
  assert slow.landed == [(1, {'status': 'ok'})]
