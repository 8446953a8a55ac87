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
  ending = watch._check_notes(board.read(sess, 5000))  # pylint: disable=protected-access
  assert ending.exit_code == exit_codes.RUN_FAILED
  assert ending.failure['task'] == 'worker1'
  assert 'not one' in ending.failure['message']


def test_a_well_formed_note_passes_unchanged(board_session):
  board, sess, post = board_session
  failure = {'type': 'DataError', 'message': 'bad shard', 'task': 'worker1',
             'hint': None}
  post(1, json.dumps({'status': 'stalled', 'failure': failure}))
  assert board.read(sess, 5000).notes[1] == {'status': 'stalled',
                                             'failure': failure}


# Entries of the tf2 board: whole entries that are garbage, and entries
# whose note is one of the garbled notes above.
GARBLED_ENTRIES = ['not json', '[]', '7', '{"started": "x", "completed": -1}'
                  ] + ['{"started": 2, "completed": 2, "note": %s}' % n
                       for n in GARBLED if n != 'not json at all']


@pytest.mark.parametrize('text', GARBLED_ENTRIES)
def test_a_garbled_tf2_board_entry_reads_as_that_clients_failure(text):
  """The tf2 board keeps each client's entry as JSON in the coordination
  service; one a client cannot parse must not fail the whole read."""
  entry = tf2_board._entry_from(text)  # pylint: disable=protected-access
  assert isinstance(entry['started'], int) and entry['started'] >= 0
  assert isinstance(entry['completed'], int) and entry['completed'] >= 0
  if '"note"' in text or not text.startswith('{'):
    assert entry['note']['failure']['type'] == 'MalformedNote'
