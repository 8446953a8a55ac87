"""A garbled or forged exit note on the progress board is read as that
client's failure, never as an error of the reading.

Before, a note that was JSON but not a note ('[1]', '{"status": 5}')
raised inside the watchdog's check on every tick, so for the rest of the
run the stall and peer checks were off (the watchdog logged one 'watchdog
error (ignored)' and went on blind). The notes here go onto a real board
through its own post op, as a peer (or anyone who can reach the board's
host) would write them.
"""

import json

import pytest
import tensorflow as tf

from tests.cluster import helpers

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.cluster.task import progress_board
from tf_cnn_benchmarks.cluster.task import tf2_board
from tf_cnn_benchmarks.cluster.watch import cluster_watch
from tf_cnn_benchmarks.cluster.watch import root_cause

tf1 = tf.compat.v1

GARBLED = ['[1]', '5', '"ok"', 'not json at all', '{"status": 5}',
           '{"status": "exploded"}', '{"status": "failed", "failure": 3}',
           '{"status": "failed", "failure": {"message": ["x"]}}']



@pytest.fixture
def board_session():
  """A real two-client board in a local session; post(i, text) writes
  client i's note as raw text, as anyone with the board's host would."""
  graph = tf.Graph()
  with graph.as_default():
    board = progress_board.ProgressBoard('/cpu:0', 2, 0)
  with tf1.Session(graph=graph) as sess:
    sess.run(board.initializer)

    def post(index, text):
      sess.run(board._post_note, {  # pylint: disable=protected-access
          board._note_index: index, board._note_text: text})  # pylint: disable=protected-access
    yield board, sess, post


@pytest.mark.parametrize('text', GARBLED)
def test_a_garbled_note_reads_as_that_clients_failure(board_session, text):
  board, sess, post = board_session
  post(1, text)
  snapshot = board.read(sess, 5000)
  assert snapshot.notes[0] is None  # still running
  note = snapshot.notes[1]
  assert note['status'] == 'failed'
  assert note['failure']['type'] == 'MalformedNote'


@pytest.mark.parametrize('text', GARBLED)
def test_the_watch_still_ends_a_lockstep_task_naming_the_peer(board_session,
                                                             text):
  """The check that read the note returns an ending naming worker1 (it
  used to raise, every tick)."""
  board, sess, post = board_session
  post(1, text)
  watch = cluster_watch.ClusterWatch(helpers.cluster_role(), prober=None,
                                     carry_on=lambda *a: None)
  watch.start(sess, board, ['worker0', 'worker1'], 0, 0.0)
  ending = watch._check_notes(board.read(sess, 5000), 0.0)  # pylint: disable=protected-access
  assert ending.exit_code == exit_codes.RUN_FAILED
  assert ending.failure['task'] == 'worker1'
  assert 'not one' in ending.failure['message']


def test_a_well_formed_note_passes_unchanged(board_session):
  board, sess, post = board_session
  failure = {'type': 'DataError', 'message': 'bad shard', 'task': 'worker1',
             'hint': None}
  post(1, json.dumps({'status': 'stalled', 'failure': failure}))
  assert board.read(sess, 5000).notes[1] == {
      'status': 'stalled', 'failure': failure, 'provisional': False}


# Entries of the tf2 board: whole entries that are garbage, and entries
# whose note is one of the garbled notes above.
GARBLED_ENTRIES = ['not json', '[]', '7', '{"started": "x", "completed": -1}',
                   '{"started": 1, "completed": 1, "between": "x"}',
                   '{"started": 1, "completed": 1, "between": -2.5}',
                   '{"started": 1, "completed": 1, "between": 1e999}',
                   '{"started": 1, "completed": 1, "between": true}',
                  ] + ['{"started": 2, "completed": 2, "note": %s}' % n
                       for n in GARBLED if n != 'not json at all']


@pytest.mark.parametrize('text', GARBLED_ENTRIES)
def test_a_garbled_tf2_board_entry_reads_as_that_clients_failure(text):
  """The tf2 board keeps each client's entry as JSON in the coordination
  service; one a client cannot parse must not fail the whole read."""
  entry = tf2_board._entry_from(text)  # pylint: disable=protected-access
  assert isinstance(entry['started'], int) and entry['started'] >= 0
  assert isinstance(entry['completed'], int) and entry['completed'] >= 0
  assert isinstance(entry['between'], float)
  assert 0 <= entry['between'] < float('inf'), entry
  if '"between"' in text:  # every one here is no count of seconds
    assert entry['between'] == 0.0, entry
  if '"note"' in text or not text.startswith('{'):
    assert entry['note']['failure']['type'] == 'MalformedNote'


@pytest.mark.timeout(60)
def test_a_data_failure_is_on_the_board_before_its_record_is_located(
    board_session, monkeypatch):
  """Corrupt data: the failing task's note names it (a DataError) at once,
  while it still re-reads shards to find the record, which on real-sized
  shards takes longer than its peers look for a root cause (so they used
  to name themselves). The re-scan here waits until another reader has
  seen the note on the real board, or 10 s."""
  import threading  # pylint: disable=g-import-not-at-top
  import types  # pylint: disable=g-import-not-at-top
  from preprocessing import diagnosis  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster.task import runtime as runtime_lib  # pylint: disable=g-import-not-at-top
  board, sess, _ = board_session
  role = helpers.cluster_role(index=1)
  seen = threading.Event()
  seen_while_locating = []

  def watch_the_board():
    while not seen.is_set():
      note = board.read(sess, 5000).notes[1]
      if note and note['failure']['task'] == 'worker1' and (
          note['failure']['type'] == 'DataError'):
        seen.set()

  def slow_locate(exc, token=None):
    del exc, token
    seen_while_locating.append(seen.wait(10))
    return None, 'the test\'s slow re-scan'
  monkeypatch.setattr(diagnosis, 'locate', slow_locate)
  params = types.SimpleNamespace(data_dir='/data', startup_timeout=60)
  runtime = runtime_lib.ClusterRuntime(role, params)
  runtime.board, runtime.client_index = board, 1
  runtime.checks = types.SimpleNamespace(signal_received=lambda: None)
  runtime._rc = types.SimpleNamespace(params=params, cluster=role)  # pylint: disable=protected-access
  reader = threading.Thread(target=watch_the_board, daemon=True)
  reader.start()
  runtime._on_failure(sess, tf.errors.DataLossError(  # pylint: disable=protected-access
      None, None, 'corrupted record at 1234'))
  assert seen_while_locating == [True], 'no note while re-reading shards'
  final = board.read(sess, 5000).notes[1]['failure']
  assert final['type'] == 'DataError' and final['task'] == 'worker1'


_LOCATING = json.dumps({'status': 'failed', 'provisional': True,
                        'failure': {'type': 'DataError', 'task': 'worker1',
                                    'message': 'bad data; locating it'}})
_LOCATED = json.dumps({'status': 'failed', 'failure': {
    'type': 'DataError', 'task': 'worker1',
    'message': 'record 7 of /data/train-00000 is corrupt'}})


def test_the_watch_waits_for_the_fuller_note_as_the_main_thread_does(
    board_session):
  board, sess, post = board_session
  post(1, _LOCATING)
  watch = cluster_watch.ClusterWatch(helpers.cluster_role(), prober=None,
                                     carry_on=lambda *a: None)
  watch.start(sess, board, ['worker0', 'worker1'], 0, 0.0)
  snapshot = board.read(sess, 5000)
  assert watch._check_notes(snapshot, 100.0) is None  # pylint: disable=protected-access
  later = 100.0 + root_cause.PEER_FAILURE_WAIT_SECONDS
  ending = watch._check_notes(snapshot, later)  # pylint: disable=protected-access
  assert 'locating it' in ending.failure['message']


@pytest.mark.timeout(60)
def test_the_root_cause_is_the_fuller_note_when_it_comes_in_time(
    board_session):
  import threading  # pylint: disable=g-import-not-at-top
  board, sess, post = board_session
  post(1, _LOCATING)
  threading.Timer(1.0, post, (1, _LOCATED)).start()
  found = root_cause.find(sess, board, ['worker0', 'worker1'], 0, {},
                          tf.errors.AbortedError(None, None, 'aborted'))
  assert 'record 7' in found.failure['message']
  post(1, _LOCATING)  # and nothing fuller comes: the provisional one
  found = root_cause.find(sess, board, ['worker0', 'worker1'], 0, {},
                          tf.errors.AbortedError(None, None, 'aborted'))
  assert 'locating it' in found.failure['message']
