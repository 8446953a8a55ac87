"""The cluster's progress board: what each client has done, readable by all.

Five small variables live on the board's host (ps 0; worker 0 when there
is no ps; the controller itself in distributed_all_reduce), one entry per
client (training task):

  steps_started[i]    steps client i has entered;
  compute_seconds[i]  seconds client i's steps spent before handing its
                      gradients over to the others (pushed to the ps),
                      summed: its own work, not the wait for theirs;
                      only in the modes whose step has that point
                      (synchronous parameter_server and
                      distributed_replicated), else it stays 0;
  between_seconds[i]  seconds client i spent between its steps (from one
                      step's return to its next step's call: its own loop,
                      a test fault's pause, a host that schedules it
                      late), summed, as timed by the client itself;
  steps_completed[i]  steps client i has completed;
  notes[i]            how client i left: '' while it runs, else JSON
                      {"status": "ok"} or {"status": ..., "failure": {...}}.

Both counters are bumped by the step's own session.run: "started" as the
run begins, "completed" after the step op (a control dependency), so a
completed step is a step that really completed. "compute_seconds" grows
in the same run too, by the time from the run's start to the ops that hand
this client's gradients over (variable manager's
``gradients_handed_over``), read by two timestamps on the client itself
(no clocks compared across hosts). "between_seconds" grows in the same
run as "started", by the gap the client timed before it and feeds in. (In
collective_all_reduce a step must not reach into another worker's task
(TensorFlow aborts the collectives there when the step is cleaned up), so
the counters are bumped by small runs just before and just after the step
instead: still only a step that returned counts.) Liveness never comes from
a thread that merely polls a counter (the original's global-step watcher
kept reporting while training was stuck): the watchdog only *reads* the
board, and the board only moves when steps finish.

A client between steps has started == completed; one inside a step has
started == completed + 1. In a synchronous cluster the client whose
"started" is behind the others' is the one the others are waiting for;
a client inside the step whose compute is slower makes them wait as
well, which only its compute_seconds show.
"""

import dataclasses
import json
from typing import Optional, Tuple

import tensorflow as tf

from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.liveness import endings

tf1 = tf.compat.v1

STARTED_NAME = 'cluster_steps_started'
COMPLETED_NAME = 'cluster_steps_completed'
COMPUTE_NAME = 'cluster_compute_seconds'
BETWEEN_NAME = 'cluster_between_seconds'
NOTES_NAME = 'cluster_exit_notes'

@dataclasses.dataclass(frozen=True)
class Snapshot:
  """One reading of the board."""
  started: Tuple[int, ...]
  completed: Tuple[int, ...]
  notes: Tuple[Optional[dict], ...]
  # Empty: a reading made without them.
  compute_seconds: Tuple[float, ...] = ()
  between_seconds: Tuple[float, ...] = ()

  def in_step(self, i):
    return self.started[i] > self.completed[i]

  def left(self, i):
    return self.notes[i] is not None

  def behind(self):
    """Clients still running that have not entered the newest step."""
    running = [i for i in range(len(self.started)) if not self.left(i)]
    if not running:
      return []
    newest = max(self.started[i] for i in running)
    return [i for i in running if self.started[i] < newest]


# How a client may say it left (liveness/endings.py's statuses, and ok).
NOTE_STATUSES = ('ok', endings.FAILED, endings.STALLED, endings.UNREACHABLE,
                 endings.INTERRUPTED)
_FAILURE_KEYS = ('type', 'message', 'task', 'hint')


def note_from(value):
  """A client's exit note as every reader may trust it: None while the
  client runs, else {'status': one of NOTE_STATUSES, 'failure': None or a
  failures.failure dict of strings, 'provisional': whether a fuller note
  is on its way (the failure is known, its details are still being found:
  a bad record being located)}.

  ``value``: the board's raw text (JSON; bytes or str, '' while running) or
  the decoded entry of the tf2 board. Anything else, garbled or forged,
  reads as the client's failure saying so: one bad note must not take the
  watchdog's stall and peer checks down with it for the rest of the run.
  """
  if isinstance(value, bytes):
    value = value.decode('utf-8', 'replace')
  if isinstance(value, str):
    if not value:
      return None
    try:
      value = json.loads(value)
    except ValueError:
      return _malformed(value)
  if value is None:
    return None
  if not isinstance(value, dict) or value.get('status') not in NOTE_STATUSES:
    return _malformed(value)
  failure = value.get('failure')
  if failure is not None and not (
      isinstance(failure, dict) and all(
          isinstance(failure.get(k), (str, type(None)))
          for k in _FAILURE_KEYS)):
    return _malformed(value)
  return {'status': value['status'],
          'failure': None if failure is None else {
              k: failure.get(k) for k in _FAILURE_KEYS},
          'provisional': value.get('provisional') is True}


def _malformed(value):
  return {'status': endings.FAILED, 'failure': failures.failure(
      'MalformedNote', 'left an exit note that is not one: %s' % (
          repr(value)[:200],)), 'provisional': False}


def chief_initialised_vector(initial_value, name):
  """A variable shared by the cluster's tasks (by name, on their device).

  It belongs to no collection, so no task's generic initializer can reset
  it: only the chief runs its initializer, once, explicitly.
  """
  return tf1.Variable(initial_value, trainable=False, collections=[],
                      name=name)


class ProgressBoard:
  """The board's variables and the ops that read and write them."""

  def __init__(self, device, num_clients, index):
    """``index``: the client this task is (-1: a reader only, e.g. ps 0)."""
    self.device = device
    self.index = index
    with tf1.device(device):
      self.started = chief_initialised_vector(
          tf.zeros([num_clients], tf.int64), STARTED_NAME)
      self.completed = chief_initialised_vector(
          tf.zeros([num_clients], tf.int64), COMPLETED_NAME)
      self.compute_seconds = chief_initialised_vector(
          tf.zeros([num_clients], tf.float64), COMPUTE_NAME)
      self.between_seconds = chief_initialised_vector(
          tf.zeros([num_clients], tf.float64), BETWEEN_NAME)
      self.notes = chief_initialised_vector(tf.fill([num_clients], ''),
                                            NOTES_NAME)
      self._read = [tf.identity(v.read_value())
                    for v in (self.started, self.completed, self.notes,
                              self.compute_seconds, self.between_seconds)]
      self._exists = tf1.is_variable_initialized(self.notes)
      self._note_text = tf1.placeholder(tf.string, [], name='exit_note')
      self._note_index = tf1.placeholder(tf.int32, [], name='exit_note_index')
      self._post_note = tf1.scatter_update(
          self.notes, tf.reshape(self._note_index, [1]),
          tf.reshape(self._note_text, [1]))
      if index >= 0:
        one = tf.constant([1], tf.int64)
        # Fed with the seconds since this client's previous step returned
        # (between_feed); a run that feeds nothing adds none.
        self._between = tf1.placeholder_with_default(
            tf.constant(0.0, tf.float64), [], name='seconds_between_steps')
        self._count_between = tf1.scatter_add(
            self.between_seconds, [index], tf.reshape(self._between, [1]))
        self._start = tf.group(
            tf1.scatter_add(self.started, [index], one),
            self._count_between)
        self._complete = tf1.scatter_add(self.completed, [index], one)
        # Between steps started == completed (settle).
        self._settle = tf1.scatter_update(
            self.started, [index], tf.gather(self.completed, [index]))
    self.initializer = tf.group(self.started.initializer,
                                self.completed.initializer,
                                self.notes.initializer,
                                self.compute_seconds.initializer,
                                self.between_seconds.initializer)

  def counted_step(self, step_op, handed_over=(), own_device=None):
    """``step_op`` plus this client's board updates, for one run.

    ``handed_over``: the ops of ``step_op`` after which this client's
    gradients are with the others, before it waits for theirs (empty: the
    step has no such point, and compute_seconds stays 0); the timestamps
    around them are taken on ``own_device``. One more scatter_add on the
    board's host, in the same run: no round trip.
    """
    before_completed = [step_op]
    if handed_over:
      with tf1.device(own_device):
        # No inputs: it runs as the step's run begins.
        began = tf.timestamp()
        with tf.control_dependencies(handed_over):
          computed = tf.timestamp() - began
      with tf1.device(self.device):
        before_completed.append(tf1.scatter_add(
            self.compute_seconds, [self.index], tf.reshape(computed, [1])))
    with tf1.device(self.device):
      one = tf.constant([1], tf.int64)
      started = tf1.scatter_add(self.started, [self.index], one)
      before_completed.append(self._count_between)
      with tf.control_dependencies(before_completed + [started]):
        completed = tf1.scatter_add(self.completed, [self.index], one)
    return tf.group(completed, name='counted_step')

  def between_feed(self, seconds):
    """The feed that counts ``seconds`` between steps in a run of
    counted_step (or publish_start)."""
    return {self._between: seconds}

  def publish_start(self, sess, timeout_ms, between=0.0):
    """A step starts (when the step's own run cannot say so), ``between``
    seconds after the previous one returned."""
    sess.run(self._start, self.between_feed(between),
             options=deadlines.bounded(timeout_ms))

  def publish_completion(self, sess, timeout_ms):
    """A step completed (when the step's own run cannot say so)."""
    sess.run(self._complete, options=deadlines.bounded(timeout_ms))

  def settle(self, sess, timeout_ms):
    """Between steps: this client's started count back to its completed
    one, after a step it ran again (cluster/task/step_repeats.py) whose aborted
    attempt counted a start that no completion matched. (An attempt that
    counted its completion too leaves both one step ahead, which no reader
    minds: they compare clients' counts, and all of them move on.)"""
    sess.run(self._settle, options=deadlines.bounded(timeout_ms))

  def read(self, sess, timeout_ms):
    started, completed, notes, compute, between = sess.run(
        self._read, options=deadlines.bounded(timeout_ms))
    return Snapshot(tuple(int(s) for s in started),
                    tuple(int(c) for c in completed),
                    tuple(note_from(n) for n in notes),
                    tuple(float(c) for c in compute),
                    tuple(float(b) for b in between))

  def exists(self, sess, timeout_ms):
    return bool(sess.run(self._exists, options=deadlines.bounded(timeout_ms)))

  def post_note(self, sess, index, note, timeout_ms):
    """Writes client ``index``'s exit note (a JSON-able dict)."""
    sess.run(self._post_note, {self._note_index: index,
                               self._note_text: json.dumps(note)},
             options=deadlines.bounded(timeout_ms))
