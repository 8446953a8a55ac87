"""What a training task of a cluster does around the driver's session.

The driver talks to this object as it would to the single-process runtime
(run/local_runtime.py). It starts the task's server (``begin``, under the run's
watchdog like every phase: liveness/). In the graph, ``wire_graph`` adds the
cluster's parts: the start protocol the variable manager asks for
(start_protocol.py), the progress board and the counted step
(progress_board.py), the "done" signals (done_signals.py). Around the session
it waits for the peers, opens the session with the cluster's checks added to
the run's watchdog (watch/task_checks.py), runs every step under its eye, and
on the way out, success or failure, leaves this task's note on the board and
tells every serving task it is done. When the main thread fails it looks for
the root cause in a peer first (root_cause.py).
"""

import contextlib
import dataclasses
import sys
import threading
import time

import tensorflow as tf

import preprocessing
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.cluster.task import cluster_rate
from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster.task import done_signals
from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks import test_hooks
from tf_cnn_benchmarks.cluster.watch import peer_failures
from tf_cnn_benchmarks.cluster.task import progress_board
from tf_cnn_benchmarks.cluster.watch import reachability
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.watch import root_cause
from tf_cnn_benchmarks.cluster import server
from tf_cnn_benchmarks.cluster.task import start_protocol
from tf_cnn_benchmarks.cluster.task import step_repeats
from tf_cnn_benchmarks.cluster.watch import task_checks

tf1 = tf.compat.v1

# Done signals sent in a hurry (the watchdog ends the task).
_HURRIED_DONE_MS = 2000
# The board's host (a collective cluster's chief) stays at most this long
# after its own note until every other client has left one or is gone: a
# peer still looking for the root cause (root_cause.py) reads the board
# here, and would otherwise find only that the board's host is gone.
BOARD_HOST_WAIT_SECONDS = root_cause.PEER_FAILURE_WAIT_SECONDS + 2.0
# ... when leaving in a hurry (within liveness/run_exit.LEAVING_SECONDS).
_HURRIED_BOARD_HOST_WAIT_SECONDS = 3.0
# What a task whose input failed says (its log, its provisional note)
# while it re-reads shards to find the record.
LOCATING = 'locating the record'


class ClusterRuntime:

  def __init__(self, role, params):
    self.role = role
    self.params = params
    self.run_watch = None  # the run's liveness/watchdog.Watchdog
    self.checks = None   # the cluster's checks on it, once in a session
    self._rc = self._result = None
    self._steps_run = 0
    # When the previous step returned (time.monotonic()): the board counts
    # the seconds from there to the next step's call (stragglers.py).
    self._previous_step_returned = None
    # Seconds since then that the main thread spent on work it names
    # (``doing``: a checkpoint save): not this worker's own slowness, so
    # not counted in its gap.
    self._named_work_seconds = 0.0
    self._last_step = None
    self._fault = test_hooks.planned_fault(role.task_name)
    # The cluster's parts of the graph (wire_graph).
    self.start = self.board = self.done = self.rate = self._hello = None
    self._board_device = None
    self._board_host = None  # its label, e.g. worker0
    self.labels, self.client_index = [], None
    self._board_in_step = True
    # Notes reach the board in the order they were left (a provisional
    # note whose post overran its bound must not land after the final one).
    self._note_lock = threading.Lock()
    self._hosts_board = False  # this task hosts the board (wire_graph)

  @property
  def is_chief(self):
    return self.role.is_chief

  def task_file_path(self, path):
    return roles.per_task_path(path, self.role)

  def begin(self, rc, run_watch):
    """Starts this task's server; returns rc with the started role."""
    self.run_watch = run_watch
    self._mode = rc.mode
    # One --startup_timeout for every wait from the peers' ports to the
    # start barrier (started in open_session).
    self.startup = deadlines.StartupClock(self.params.startup_timeout)
    params = self.params
    # A worker's server holds its towers; the controller's holds no tower.
    num_devices = params.num_gpus if self.role.job_name == roles.WORKER else 1
    with run_watch.phase('server_start'):
      self.role = server.start_server(self.role, server.server_config(
          self.role, num_devices,
          base_config=run_config.session_config(params, rc)))
      run_watch.say('Cluster task %s (%s); %s' % (
          self.role.task_name, self.role.address,
          '; '.join(roles.describe(self.role))))
      run_watch.say(server.device_summary(self.role))
    sys.stdout.flush()
    return dataclasses.replace(rc, cluster=self.role)

  def running(self):
    """Around the rest of the run, from just after ``begin``. The graph
    engine's way out (the note, "done") is its session's (open_session):
    until the session exists no peer can read a note or hear "done"."""
    return contextlib.nullcontext()

  # -- the graph

  def wire_graph(self, variable_manager, global_step, step_op):
    """Builds the cluster's parts; returns the step op that also publishes
    this task's progress (in the same session.run, so only real steps
    count). Last in the graph: the start may initialise every local
    variable that exists by now."""
    needs = variable_manager.cluster_start(global_step)
    self.start = start_protocol.build(self.role, needs, self.startup)
    self.labels = done_signals.client_labels(self.role)
    self.client_index = self.labels.index(self.role.task_name)
    board_device = needs.barrier_device or self.role.device + '/device:CPU:0'
    self.board = progress_board.ProgressBoard(
        board_device, len(self.labels), self.client_index)
    self._hosts_board = board_device.startswith(self.role.device + '/')
    self._board_device = board_device
    spec = tf.DeviceSpec.from_string(board_device)
    self._board_host = roles.task_label(spec.job, spec.task)
    self.done = done_signals.DoneSignals(self.role)
    self.rate = cluster_rate.ClusterRate.of_graph(
        self.role, self._mode, global_step, needs.images_per_global_step)
    with tf1.device(self.role.device):
      # The first run of a session creates it; TensorFlow then waits for
      # every peer, unbounded, so that run is a no-op the watchdog times.
      self._hello = tf.no_op(name='cluster_session_hello')
    # Collective steps must not reach into the board's task
    # (progress_board.py): their progress is published by separate runs.
    self._board_in_step = not variable_manager.mode.uses_collectives
    # When this worker's gradients are handed over: the board times its
    # compute up to there (empty in the modes whose step has no such point).
    handed_over = variable_manager.gradients_handed_over()
    own_device = self.role.device + '/device:CPU:0'
    if self._fault is not None:
      self._fault.in_step_graph(handed_over, own_device)
    return self.board.counted_step(step_op, handed_over, own_device) \
        if self._board_in_step else step_op

  # -- the run

  def attach_run(self, rc, result):
    self._rc, self._result = rc, result
    self._last_step = rc.num_warmup_batches + rc.num_batches

  def _note_peer_failure(self, run_failure):
    if self._result is not None:
      self._result.peer_failures.append(run_failure)

  def _note_stragglers(self, found):
    if self._result is not None:
      self._result.stragglers = found

  def _session_config(self, config):
    # Device filters: the session sees only the tasks it needs. Calls made
    # without RunOptions (init ops, a restore, a save) end by the step's
    # deadline too.
    config = server.server_config(self.role, config.device_count['CPU'],
                                  base_config=config)
    if self.role.step_deadline_seconds:
      config.operation_timeout_in_ms = int(
          self.role.step_deadline_seconds * 1000)
    return config

  @contextlib.contextmanager
  def open_session(self, graph, config):
    """A session on this task's server, never closed here, watched.

    Session.close() can block for minutes once a peer has died, so the
    task's process leaves with os._exit instead (run_task.py).
    """
    config = self._session_config(config)
    peers = self.role.session_peers()
    run_watch = self.run_watch
    self.startup.start()
    self.checks = task_checks.TaskChecks(
        self.role, self.params, self.startup, self.role.all_peers(), peers,
        run_watch, self._note_peer_failure,
        note_stragglers=self._note_stragglers)
    self.checks.start(self._fault.around_check if self._fault else None)
    try:
      names = self.wait_for_peers(peers)
      with run_watch.phase('session', '%s (TensorFlow waits for every one '
                           'of %s)' % (task_checks.CREATING_SESSION, names)):
        sess = tf1.Session(self.role.target, graph=graph, config=config)
        sess.run(self._hello)
        # Proof to the serving tasks that this task started, which their
        # probes may miss (done_signals.py).
        self.done.arrive(sess)
      # Only a created session can leave notes (else they too would wait).
      run_watch.exit.attach_leave(
          lambda status, failure: self._leave(sess, status, failure))
      try:
        # As `with Session()` would: graph mode for code that asks (Saver).
        with graph.as_default(), sess.as_default():
          yield sess
        self._leave_note(sess, {'status': 'ok'})
      except Exception as e:
        self._on_failure(sess, e)
        raise
      finally:
        self._wait_for_the_others(sess, BOARD_HOST_WAIT_SECONDS)
        self.done.send(sess)
    finally:
      self.checks.stop()

  def wait_for_peers(self, peers):
    """Waits (phase 'peers', at most what is left of --startup_timeout)
    until every one of
    ``peers`` ({label: address}) accepts connections: TensorFlow would
    wait for them unbounded. Returns their names, for the next phase."""
    names = ', '.join(sorted(peers))
    with self.run_watch.phase('peers', 'waiting for %s to accept '
                              'connections' % names):
      reachability.wait_for(peers, self.startup.left(),
                            '%s cannot start' % self.role.task_name)
    return names

  def initialize(self, sess, built, restore):
    self.start.run(sess, built, restore, self.board, self.doing)
    self.checks.training_started(sess, self.board, self.labels,
                                   self.client_index)

  def step_run_options(self):
    """Every step is bounded just past the stall timeout and its shutdown
    grace: a dead peer can otherwise block a synchronous step forever (the
    watchdog normally ends such a task first, with a report)."""
    if not self.role.step_deadline_seconds:
      return None
    return deadlines.bounded(self.role.step_deadline_seconds * 1000)

  def run_step(self, sess, fetches, options):
    """One step's session.run (the driver's), watched."""
    return self._counted_step(
        sess, lambda feed: sess.run(fetches, feed, options=options))

  def untimed_step_feed(self):
    """A step that counts itself on the board is fed its gap; an extra
    one (a traced step) is fed 0, so that it runs the timed steps' graph
    and partitions (benchmarks/step_profile.py reads them)."""
    return self.board.between_feed(0.0) if self._board_in_step else None

  def _counted_step(self, sess, run):
    """One step, ``run(feed)``: watched, with its test fault, and counted
    on the board around it when the step itself cannot count it (``feed``:
    the board's, when the step counts itself, else None)."""
    self._steps_run += 1
    step = self._steps_run
    with self.checks.doing('step %d' % step, step=True):
      if self._fault is not None:
        self._fault.before_step(step, self.checks.rename_activity)
      # Timed here, after the fault's pause and before the step's call:
      # the straggler judge reads how much longer each worker's gaps are
      # than the others' from these sums, not from how often a reading
      # happens to find it between steps (readings come late while the
      # chief computes, so they over-sample the others' wait).
      # Work the task names (a checkpoint save, which the watchdog bounds
      # on its own) is not the worker's slowness: it is left out, or the
      # chief would be named for every long save of a synchronous cluster.
      returned, now = self._previous_step_returned, time.monotonic()
      between = 0.0 if returned is None else max(
          0.0, now - returned - self._named_work_seconds)
      self._named_work_seconds = 0.0
      feeds = [None]
      if self._board_in_step:
        # Only the first attempt counts the gap; a repeated one is fed as
        # an uncounted step (the same feed keys: another set would
        # register another graph on every task).
        feeds = [self.board.between_feed(between), self.untimed_step_feed()]
      else:
        self.board.publish_start(sess, deadlines.RPC_TIMEOUT_MS, between)

      def attempt():
        values = run(feeds.pop(0) if len(feeds) > 1 else feeds[0])
        if self._fault is not None:
          self._fault.after_step(step)
        return values

      values, refused = step_repeats.run(attempt, not self.role.lockstep,
                                         self.run_watch.say)
      if refused:
        self._note_repeated_step(step, refused)
        if self._board_in_step:
          # The step counts itself on the board (counted_step): an aborted
          # attempt may have counted a start that no completion matched.
          self.board.settle(sess, deadlines.RPC_TIMEOUT_MS)
      if not self._board_in_step:
        self.board.publish_completion(sess, deadlines.RPC_TIMEOUT_MS)
    self._previous_step_returned = time.monotonic()
    if step == self._last_step:
      # Peers may now leave normally; only this task's own work counts.
      self.checks.training_ended()
    return values

  def _note_repeated_step(self, step, refused):
    """Step ``step`` completed after being refused once per line of
    ``refused`` (step_repeats.py): kept for the record."""
    if self._result is not None:
      self._result.repeated_steps.append({'step': step, 'refused': refused})

  @contextlib.contextmanager
  def doing(self, text):
    """The main thread is doing ``text`` between steps (stall reports say
    so; the next step's gap leaves its time out). Between steps only, and
    not nested: a section around a step, or inside another, would take
    that time out of the next gap as well."""
    started = time.monotonic()
    try:
      with (contextlib.nullcontext() if self.checks is None else
            self.checks.doing(text)):
        yield
    finally:
      self._named_work_seconds += time.monotonic() - started

  def timing_starts(self, stepper):
    self.rate.timing_starts(stepper)

  def report(self, stepper, reporter, times):
    self.rate.report(stepper, reporter, times)

  # -- leaving

  def _leave_note(self, sess, note):
    """Posts this task's exit note, waiting at most a second past the
    call's own deadline: a note is often this session's first write to the
    board, and TensorFlow registers a graph on the board's host before its
    first run there with no deadline, so a frozen or cut-off host would
    hold the task (for good with --stall_timeout=0). Returns whether the
    post ended; one that did not is left to land, or not, on its own."""
    def post():
      with self._note_lock:
        try:
          self.board.post_note(sess, self.client_index, note,
                               deadlines.RPC_TIMEOUT_MS)
        except tf.errors.OpError:
          pass  # The board's host is gone; the others find out themselves.
    return deadlines.at_once([post], deadlines.RPC_TIMEOUT_MS)

  def _leave(self, sess, status, run_failure):
    """Leaving in a hurry (liveness/run_exit.py): the note, then done to
    the board's host (done first could let it leave before the note; a
    note its host has not taken within _leave_note's bound is left behind,
    and done follows anyway: without it that host would wait for this
    task until its port closes, and then say it left without a word).
    Every other serving task hears done at once, beside the note: a board
    host cut off makes the note wait out its RPC deadline, past the
    hurried exit's LEAVING_SECONDS, and those tasks then never heard it
    (they said their clients "left without saying done", exit 1)."""
    others = None
    if self.done is not None:  # a cluster without serving tasks has none
      others = threading.Thread(
          target=self.done.send, args=(sess, _HURRIED_DONE_MS),
          kwargs={'skip': self._board_device}, daemon=True)
      others.start()
    self._leave_note(sess, {'status': status, 'failure': run_failure})
    self._wait_for_the_others(sess, _HURRIED_BOARD_HOST_WAIT_SECONDS)
    if self.done is not None:
      if self._board_device is not None:  # else every task heard it above
        self.done.send(sess, _HURRIED_DONE_MS, only=self._board_device)
      others.join()

  def _wait_for_the_others(self, sess, seconds):
    """As the board's host, waits (at most ``seconds``) until every other
    client has left its note or is gone; see BOARD_HOST_WAIT_SECONDS."""
    if not self._hosts_board:
      return
    peers = self.role.all_peers()
    deadline = time.monotonic() + seconds
    refusals = reachability.RefusalCount()
    while time.monotonic() < deadline:
      try:
        snapshot = self.board.read(sess, deadlines.RPC_TIMEOUT_MS)
      except tf.errors.OpError:
        return
      pending = {label: peers[label] for i, label in enumerate(self.labels)
                 if i != self.client_index and not snapshot.left(i)}
      if not pending:
        return
      for label, reason in reachability.probe_all(pending,
                                                  timeout=0.5).items():
        refusals.saw(label, reason)
      if all(refusals.gone(label) for label in pending):
        return
      time.sleep(0.5)

  def _on_failure(self, sess, exc):
    """The main thread failed: find the root cause, or publish ours."""
    signalled = self.checks.signal_received()
    if signalled and getattr(exc, 'status', None) != endings.INTERRUPTED:
      # Stopping the cluster stops its peers too (the launcher signals
      # them all): whatever failed after the signal is its consequence.
      exc.status, exc.exit_code = endings.INTERRUPTED, exit_codes.INTERRUPTED
      exc.root_cause = endings.interrupted_by(
          signalled, '%s: %s' % (type(exc).__name__,
                                 failures.first_line(exc)))
    status = getattr(exc, 'status', endings.FAILED)
    if status == endings.INTERRUPTED:
      own = getattr(exc, 'root_cause', None) or failures.failure(
          'Interrupted', str(exc), self.role.task_name)
      self._leave_note(sess, {'status': status, 'failure': own})
      return
    if peer_failures.is_secondary(exc):
      root = root_cause.find(sess, self.board, self.labels,
                             self.client_index, self.role.all_peers(), exc)
      if root is not None:
        # The cause's status and code: a partition is unreachable (4).
        exc.root_cause, exc.status, exc.exit_code = (
            root.failure, root.status, root.exit_code)
        unreadable = ((root.status in (endings.STALLED, endings.UNREACHABLE)
                       and root.failure['task'] == self._board_host) or
                      root.failure['type'] == peer_failures.CUT_OFF)
        if not unreadable:
          # (A note to a frozen or cut-off board's host, or from this task
          # when it is the one cut off, would wait out _leave_note's whole
          # bound, and nobody could read it.)
          self._leave_note(sess, {'status': root.status,
                                  'failure': root.failure})
      elif step_repeats.is_refused_copy(exc):
        # No peer failed: TensorFlow repeated a request id, or a resend
        # across a blinking link was refused (step_repeats.py).
        exc.root_cause = step_repeats.refused_failure(
            self.role.task_name, exc, self.role.lockstep)
        self._leave_note(sess, {'status': status,
                                'failure': exc.root_cause})
      return
    if self._rc is not None:
      if self._rc.params.data_dir and preprocessing.may_need_locating(exc):
        # Finding the bad record re-reads shards, for up to
        # diagnosis.RESCAN_SECONDS on real-sized ones; the peers whose
        # collectives this failure aborted look for its root cause for a
        # few seconds only. So they learn at once that it is this task's
        # data, and the exact record follows.
        first = failures.failure(
            'DataError', 'bad input data on %s (%s); %s' % (
                self.role.task_name, failures.first_line(exc), LOCATING),
            self.role.task_name)
        self._leave_note(sess, {'status': status, 'failure': first,
                                'provisional': True})
        if self.run_watch is not None:
          # The re-scan can take minutes: say why this task is not done.
          self.run_watch.say('%s: bad input data; %s (re-reading shards, '
                             'up to %.0f s)' % (self.role.task_name, LOCATING,
                                                preprocessing.RESCAN_SECONDS))
      self._leave_note(sess, {'status': status,
                              'failure': failures.describe(exc, self._rc)})
