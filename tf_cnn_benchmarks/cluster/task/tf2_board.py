"""A tf2 cluster's progress board, kept in TensorFlow's coordination service.

The graph engine's board is a few variables on one task, read and written
by session.run (progress_board.py). A tf2 cluster has no session to run
them with, but the coordination service its strategy starts (hosted by
worker 0, reached by every task) keeps a key-value store; this board keeps
the same facts there and reads back the same progress_board.Snapshot, so
the watchdog (cluster_watch.py), the stall reports and the root cause
search (root_cause.py) read a tf2 cluster as they read a graph one.

Each client owns one key, ``tf_cnn_benchmarks/board/<client index>``,
holding JSON {"started": n, "completed": m, "between": seconds, "note":
{...} or null} ("between": the seconds it spent between its steps, summed,
as progress_board's between_seconds). Only
that client writes it: the store cannot overwrite a key, so a write is a
delete and an insert, two calls to worker 0 that have no deadline. So one
thread of the board's own makes them, always writing the newest entry, and
no caller waits for it longer than its own bound: a frozen worker 0 (a
stopped process still accepts connections) would hold such a call for
ever, and with it a step that had not yet reached the collectives the
coordination service aborts (a CI run hung so, in a write before a step).
Any task reads the others' keys with a get that waits at most a given
time; a key caught between the two writes, or not yet written, reads as
the last value this reader saw.

A step writes once, as it starts: {started: n, completed: n - 1} (steps
run one after the other, so its start says the previous one completed),
handed to the writer without waiting. Its completion is only counted here,
and reaches the store with the next step's start, this task's next read of
the board (its watchdog reads it every second: a task stuck between steps
shows "done with step n, not in a step" within a second), or its exit
note, which is waited for (within its bound). That keeps one write, not
two, for each step, none of it on the timed thread, and keeps ``started``
exact once written, which the stall reports read.

The methods take the graph board's ``sess`` argument and ignore it, so
code written against progress_board.ProgressBoard runs unchanged.
ParameterServerStrategy's cluster has one client, its coordinator, and no
coordination service: its board (LocalBoard) stays in that process.
"""

import json
import math
import threading

import tensorflow as tf
# The coordination service's key-value store has no public Python name;
# MultiWorkerMirroredStrategy itself reaches it through the eager context.
from tensorflow.python.eager import context  # pylint: disable=g-direct-tensorflow-import

from tf_cnn_benchmarks.cluster.task import progress_board

_KEY = 'tf_cnn_benchmarks/board/%d'
# One key's read waits at most this long (a missing key costs it).
_KEY_READ_MS = 500


class KeyValueBoard:

  def __init__(self, num_clients, index):
    """``index``: the client this task is."""
    self.index = index
    self._num_clients = num_clients
    # Guards the counts and the entries below, never held across a call
    # to the store; notified when the writer wrote or failed.
    self._changed = threading.Condition()
    self._started = self._completed = 0
    self._between = 0.0
    self._note = None
    self._wanted = None  # the newest entry text, for the writer
    self._written = None  # the entry text in the store
    # Entries handed to the writer, and the number of the newest stored.
    self._handed = self._stored = 0
    self._failed = None  # the writer's last error, until a caller raised it
    self._writer = None
    self._last_seen = [None] * num_clients  # entry dicts, by client
    # Worker 0 found frozen: its writes will never be answered, so from
    # then on no caller waits for them, and reads fail at once.
    self._host_frozen = False

  def host_frozen(self):
    """Worker 0, the store's host, is frozen (tf2_runtime._frozen_peer):
    this task's notes are not left, and reads fail at once."""
    self._host_frozen = True

  def _check_host(self):
    if self._host_frozen:
      raise tf.errors.UnavailableError(
          None, None, 'the progress board\'s host, worker 0, is frozen')

  # -- this client's key

  def _publish(self, wait_ms):
    """Hands this client's entry to the writer (under the lock); with
    ``wait_ms``, waits that long for it to be in the store. Raises the
    writer's error (worker 0 gone), or DeadlineExceededError."""
    entry = self._entry_text()
    self._raise_the_writers_error()
    if entry != self._written and entry != self._wanted:
      self._wanted = entry
      self._handed += 1
      if self._writer is None:
        self._writer = threading.Thread(target=self._write_for_ever,
                                        name='tf2-board-writer', daemon=True)
        self._writer.start()
      self._changed.notify_all()
    handed = self._handed
    if wait_ms and not self._changed.wait_for(
        lambda: self._stored >= handed or self._failed is not None,
        wait_ms / 1000.0):
      raise tf.errors.DeadlineExceededError(
          None, None, 'worker 0, the progress board\'s host, stored no '
          'entry of this task\'s within %d ms' % wait_ms)
    self._raise_the_writers_error()

  def _raise_the_writers_error(self):
    """Raises the writer's last error once, if it has one (under the
    lock)."""
    if self._failed is not None:
      failed, self._failed = self._failed, None
      raise failed

  def _entry_text(self):
    """This client's entry as it is now (under the lock)."""
    return json.dumps({'started': self._started,
                       'completed': self._completed,
                       'between': round(self._between, 6),
                       'note': self._note})

  def _write_for_ever(self):
    """The writer thread: puts the newest wanted entry in the store."""
    ctx = context.context()
    key = _KEY % self.index
    while True:
      with self._changed:
        self._changed.wait_for(lambda: self._wanted is not None)
        entry, self._wanted = self._wanted, None
        number = self._handed
        deleted = self._written is not None
      try:
        if deleted:
          ctx.delete_config_key_value(key)
        with self._changed:
          self._written = None  # deleted: a failed insert must be retried
        ctx.set_config_key_value(key, entry)
      except tf.errors.OpError as e:
        with self._changed:
          self._failed = e
          self._changed.notify_all()
        continue
      with self._changed:
        self._written, self._stored = entry, number
        self._changed.notify_all()

  def publish_initial(self, timeout_ms):
    """This client's key, before anybody reads it (start of training)."""
    self.wait_written(timeout_ms)

  def publish_start(self, sess, timeout_ms, between=0.0):
    """The step's start, ``between`` seconds after the previous one
    returned, handed to the writer: not waited for."""
    del sess, timeout_ms
    self._check_host()
    with self._changed:
      self._between += between
      self._started += 1
      self._publish(0)

  def publish_completion(self, sess, timeout_ms):
    """Counted; published later (see above), never inside the step."""
    del sess, timeout_ms
    with self._changed:
      self._completed += 1

  def post_note(self, sess, index, note, timeout_ms):
    """This client's exit note (a JSON-able dict); ``index`` is its own.
    Waits at most ``timeout_ms`` for it to be stored."""
    del sess
    assert index == self.index, (index, self.index)
    self._check_host()
    with self._changed:
      self._note = note
      self._publish(timeout_ms)

  def wait_written(self, timeout_ms):
    """Waits at most ``timeout_ms`` until this client's newest entry is in
    the store (tests read the store right after a step's start)."""
    with self._changed:
      self._publish(timeout_ms)

  # -- reading

  def _entry(self, i, timeout_ms):
    try:
      text = context.context().get_config_key_value(
          _KEY % i, timeout_in_ms=max(1, int(min(timeout_ms, _KEY_READ_MS))))
    except tf.errors.DeadlineExceededError:
      return self._last_seen[i]
    entry = _entry_from(text)
    self._last_seen[i] = entry
    return entry

  def read(self, sess, timeout_ms):
    """A progress_board.Snapshot, after publishing this client's own
    entry if a completion is still unpublished; raises tf.errors.OpError
    when the store cannot be reached (its host, worker 0, is gone)."""
    del sess
    self._check_host()
    with self._changed:
      self._publish(0)
      # This client's own entry as it is now, not as the store may still
      # hold it (the writer may not have caught up).
      own = _entry_from(self._entry_text())
    entries = [own if i == self.index else
               self._entry(i, timeout_ms) or _entry_from('')
               for i in range(self._num_clients)]
    return progress_board.Snapshot(
        tuple(e['started'] for e in entries),
        tuple(e['completed'] for e in entries),
        tuple(e['note'] for e in entries),
        (0.0,) * self._num_clients,
        tuple(e['between'] for e in entries))


def _entry_from(text):
  """A client's entry as readers may trust it: counts that are whole
  numbers (else 0) and a progress_board.note_from note; a garbled entry
  reads as that client's malformed note, never as an error of the read."""
  try:
    entry = json.loads(text) if text else {}
  except ValueError:
    entry = {'note': text}
  if not isinstance(entry, dict):
    entry = {'note': entry}

  def count(key):
    value = entry.get(key, 0)
    return value if isinstance(value, int) and value >= 0 else 0
  between = entry.get('between', 0.0)
  if (isinstance(between, bool) or not isinstance(between, (int, float))
      or not math.isfinite(between) or between < 0):
    between = 0.0
  return {'started': count('started'), 'completed': count('completed'),
          'between': float(between),
          'note': progress_board.note_from(entry.get('note'))}


class LocalBoard:
  """The board of a cluster whose one client is this process
  (ParameterServerStrategy's coordinator): nobody else reads it, so it
  lives here, with KeyValueBoard's methods."""

  def __init__(self):
    self._started = self._completed = 0
    self._note = None

  def publish_initial(self, timeout_ms):
    del timeout_ms

  def publish_start(self, sess, timeout_ms, between=0.0):
    del sess, timeout_ms, between  # one client: no straggler to judge
    self._started += 1

  def publish_completion(self, sess, timeout_ms):
    del sess, timeout_ms
    self._completed += 1

  def post_note(self, sess, index, note, timeout_ms):
    del sess, index, timeout_ms
    self._note = note

  def read(self, sess, timeout_ms):
    del sess, timeout_ms
    return progress_board.Snapshot((self._started,), (self._completed,),
                                   (self._note,), (0.0,))
