"""How the tasks of a cluster agree on start and say when they leave.

Start (between-graph modes, where each worker runs its own graph):

  chief (worker 0)                     every other worker
  ----------------                     ------------------
  initialise the barrier               wait until the barrier exists
  initialise shared variables,         initialise its own (local) variables
  restore a checkpoint
  ------------- barrier 1: every worker has initialised -------------
  chief-only post-init (e.g. sync accumulators learn the global step)
  everyone's post-init (copies from the ps, collective broadcast, ...)
  ------------- barrier 2: start; warm-up and timing follow ----------

The barrier is an int64 vector on a host task (ps 0, or worker 0 when there
is no ps): entry i is the last barrier generation worker i reached. Each
worker writes its own entry and polls the vector, so a wait that runs out
of --startup_timeout can name exactly the workers that never arrived.

Leaving: every serving task (ps tasks; the workers in
distributed_all_reduce) owns a "done" queue. A training task pushes its
index into every serving task's queue as the last thing it does with the
cluster, on success and on failure; a serving task exits once every client
is done or gone (ps_task.py).

While it runs, every training task publishes its steps on the progress
board (liveness.py) and a watchdog thread (watchdog.py) watches the board,
the peers and this task's own activity: no task hangs silently, and when
one fails the others name it (failures.py). A task that fails leaves a note
on the board with its failure before it says done.
"""

import contextlib
import os
import sys
import threading
import time

import tensorflow as tf

from tf_cnn_benchmarks import cluster
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks import fault_injection
from tf_cnn_benchmarks import liveness
from tf_cnn_benchmarks import reachability
from tf_cnn_benchmarks import watchdog
from tf_cnn_benchmarks.reachability import ClusterWaitTimeout

tf1 = tf.compat.v1

DONE_QUEUE_NAME = 'cluster_done_queue'
BARRIER_NAME = 'cluster_start_barrier'
# Poll period of barrier waits: short next to a TensorFlow start-up.
_POLL_SECONDS = 0.05
# Bound of one coordination session.run (a poll, a done signal): the peer
# answers in milliseconds when it is there at all.
_RPC_TIMEOUT_MS = 10000
_DONE_TIMEOUT_MS = 5000
# Leaving in a hurry (the watchdog ends the task): the note and the done
# signals get this long together.
_LEAVING_SECONDS = 5.0


def done_queue(device, name='done_queue'):
  """The queue a serving task on ``device`` reads "done" signals from.

  Every graph that names it must declare it identically (shared_name,
  dtype, shape, capacity): TensorFlow finds the one queue by shared_name.
  """
  with tf1.device(device):
    return tf1.FIFOQueue(-1, [tf.int32], shapes=[[]],
                         shared_name=DONE_QUEUE_NAME, name=name)


def _copy_config(config):
  copy = tf1.ConfigProto()
  if config is not None:
    copy.CopyFrom(config)
  return copy


class StartBarrier:
  """Generation-numbered barrier of the workers (see module docstring)."""

  def __init__(self, device, num_workers, task_index):
    self.num_workers = num_workers
    with tf1.device(device):
      self.arrivals = liveness.chief_initialised_vector(
          tf.zeros([num_workers], tf.int64), BARRIER_NAME)
      self._generation = tf1.placeholder(tf.int64, [], name='barrier_gen')
      self._arrive = tf1.scatter_update(
          self.arrivals, [task_index], tf.reshape(self._generation, [1]))
      self._read = tf.identity(self.arrivals.read_value())
      self._exists = tf1.is_variable_initialized(self.arrivals)
    self.initializer = self.arrivals.initializer

  def wait_until_created(self, sess, timeout):
    deadline = time.monotonic() + timeout
    while not sess.run(self._exists, options=liveness.bounded(_RPC_TIMEOUT_MS)):
      if time.monotonic() >= deadline:
        raise ClusterWaitTimeout(
            'The chief (worker0) did not initialise the cluster within '
            '%.0f s (--startup_timeout); is it running?' % timeout,
            ['worker0'])
      time.sleep(_POLL_SECONDS)

  def arrive_and_wait(self, sess, generation, timeout, what):
    sess.run(self._arrive, {self._generation: generation},
             options=liveness.bounded(_RPC_TIMEOUT_MS))
    deadline = time.monotonic() + timeout
    while True:
      arrivals = sess.run(self._read, options=liveness.bounded(_RPC_TIMEOUT_MS))
      missing = ['worker%d' % i for i, g in enumerate(arrivals)
                 if g < generation]
      if not missing:
        return
      if time.monotonic() >= deadline:
        raise ClusterWaitTimeout(
            '%s never reached the %s barrier within %.0f s '
            '(--startup_timeout); %d of %d workers did.' % (
                ', '.join(missing), what, timeout,
                self.num_workers - len(missing), self.num_workers), missing)
      time.sleep(_POLL_SECONDS)


class Coordination:
  """What a training task of a cluster does around the driver's session.

  Base class: one client drives the whole cluster (the controller in
  distributed_all_reduce), so initialisation is the single-process one,
  there is nobody to wait for at start, and the progress board is its own.
  """

  def __init__(self, role, params, global_step, images_per_global_step,
               board_device=None):
    self.role = role
    self.params = params
    self.global_step = global_step
    self.images_per_global_step = images_per_global_step
    self._done_ops = []
    for job, index in role.serving_tasks():
      queue = done_queue('/job:%s/task:%d' % (job, index),
                         name='done_queue_%s%d' % (job, index))
      self._done_ops.append((cluster.task_label(job, index),
                             queue.enqueue([role.task_index])))
    self._step_at_start = None
    # Clients of the board: every training task, by index.
    self.client_labels = [cluster.task_label(job, i)
                          for job, i in role.clients()]
    self.client_index = self.client_labels.index(role.task_name)
    self.board = liveness.ProgressBoard(
        board_device or role.device + '/device:CPU:0',
        len(self.client_labels), self.client_index)
    # Collective steps must not reach into the board's task (liveness.py).
    self._board_in_step = role.variable_update != 'collective_all_reduce'
    with tf1.device(role.device):
      # The first run of a session creates it; TensorFlow then waits for
      # every peer, unbounded, so that run is a no-op the watchdog times.
      self._hello = tf.no_op(name='cluster_session_hello')
    self._fault = fault_injection.planned_for(role.task_name)
    self.watchdog = None
    self.sess = None
    self._run = None
    self._steps_run = 0
    self._last_step = None

  def _other_tasks(self):
    """(job, index, address) of every other task of the cluster."""
    return [(job, i, address)
            for job in (cluster.PS, cluster.WORKER, cluster.CONTROLLER)
            for i, address in enumerate(self.role.jobs.get(job, ()))
            if (job, i) != (self.role.job_name, self.role.task_index)]

  def peers(self):
    """{label: address} of every task this task's sessions talk to."""
    filters = self.role.device_filters()
    return {cluster.task_label(job, i): address
            for job, i, address in self._other_tasks()
            if '/job:%s' % job in filters or
            '/job:%s/task:%d' % (job, i) in filters}

  def all_peers(self):
    """{label: address} of every other task of the cluster."""
    return {cluster.task_label(job, i): address
            for job, i, address in self._other_tasks()}

  def counted_step(self, step_op):
    """The step op that also publishes this task's progress (liveness)."""
    if not self._board_in_step:
      return step_op
    return self.board.counted_step(step_op)

  def attach_run(self, rc, result, write_record):
    """What the watchdog needs to end the run by itself.

    ``result``: the driver's RunResult; ``write_record(status, exit_code,
    failure)`` records the run once and returns False when the main thread
    already did.
    """
    self._run = (rc, result, write_record)
    self._last_step = rc.num_warmup_batches + rc.num_batches

  @contextlib.contextmanager
  def open_session(self, graph, config):
    """A session on this task's server, never closed here, and its watchdog.

    Session.close() can block for minutes once a peer has died, so the
    task's process leaves with os._exit instead (cluster_task.py). On the
    way out, success or failure, this task leaves its note on the board and
    tells every serving task it is done.
    """
    bound = liveness.step_bound_seconds(self.params)
    if bound:
      # Calls made without RunOptions (init ops, a restore, a save) end by
      # the step's deadline too.
      config = _copy_config(config)
      config.operation_timeout_in_ms = int(bound * 1000)
    peers = self.peers()
    self.watchdog = watchdog.Watchdog(self.role, self.params,
                                      self.all_peers(), peers, self._end_run,
                                      self._note_peer_failure)
    self.watchdog.start()
    try:
      with self.watchdog.doing('waiting for %s to accept connections' %
                               ', '.join(sorted(peers))):
        reachability.wait_for(peers, self.params.startup_timeout,
                              '%s cannot start' % self.role.task_name)
      sess = tf1.Session(self.role.target, graph=graph, config=config)
      with self.watchdog.doing('%s (TensorFlow waits for every one of %s)' % (
          watchdog.CREATING_SESSION, ', '.join(sorted(peers)))):
        sess.run(self._hello)
      # Only a created session can leave notes (else they too would wait).
      self.sess = sess
      try:
        # As `with Session()` would: graph mode for code that asks (Saver).
        with graph.as_default(), sess.as_default():
          yield sess
        self._leave_note(sess, {'status': 'ok'})
      except Exception as e:
        self._on_failure(sess, e)
        raise
      finally:
        self.signal_done(sess)
    finally:
      self.watchdog.stop()

  def run_step(self, sess, fetches, options):
    """One step's session.run (driver._run_step), watched."""
    self._steps_run += 1
    step = self._steps_run
    with self.watchdog.doing('step %d' % step, step=True):
      fault_injection.before_step(self._fault, step, self.watchdog.say)
      if not self._board_in_step:
        self.board.publish_start(sess, _RPC_TIMEOUT_MS)
      values = sess.run(fetches, options=options)
      if not self._board_in_step:
        self.board.publish_completion(sess, _RPC_TIMEOUT_MS)
    if step == self._last_step:
      # Peers may now leave normally; only this task's own work counts.
      self.watchdog.training_ended()
    return values

  def doing(self, text):
    """The main thread is doing ``text`` (stall reports say so)."""
    if self.watchdog is None:
      return contextlib.nullcontext()
    return self.watchdog.doing(text)

  def initialize(self, sess, built, restore):
    with self.doing('initialising the variables'):
      sess.run(self.board.initializer)
      sess.run(built.init_ops)
      sess.run(built.input_init_ops)
      restore()
      sess.run(built.post_init_ops)
    self._start_watching(sess)

  def _start_watching(self, sess):
    self.watchdog.training_started(sess, self.board, self.client_labels,
                                   self.client_index)

  def signal_done(self, sess, timeout_ms=_DONE_TIMEOUT_MS):
    for _, op in self._done_ops:
      try:
        sess.run(op, options=liveness.bounded(timeout_ms))
      except tf.errors.OpError:
        # Gone already: it will notice our absence by itself.
        pass

  # -- failures

  def _leave_note(self, sess, note):
    try:
      self.board.post_note(sess, self.client_index, note, _RPC_TIMEOUT_MS)
    except tf.errors.OpError:
      pass  # The board's host is gone; the others find out by themselves.

  def _on_failure(self, sess, exc):
    """The main thread failed: find the root cause, or publish ours."""
    signalled = self.watchdog.signal_received()
    if signalled and getattr(exc, 'status', None) != 'interrupted':
      # Stopping the cluster stops its peers too (the launcher signals
      # them all): whatever failed after the signal is its consequence.
      exc.status, exc.exit_code = 'interrupted', exit_codes.INTERRUPTED
      exc.root_cause = failures.failure(
          'Interrupted', 'stopped by %s (then %s: %s)' % (
              signalled, type(exc).__name__, failures.first_line(exc)))
    status = getattr(exc, 'status', 'failed')
    if status == 'interrupted':
      own = getattr(exc, 'root_cause', None) or failures.failure(
          'Interrupted', str(exc), self.role.task_name)
      self._leave_note(sess, {'status': status, 'failure': own})
      return
    if failures.is_secondary(exc):
      root = self._root_cause(sess, exc)
      if root is not None:
        exc.root_cause = root
        self._leave_note(sess, {'status': status, 'failure': root})
      return
    if self._run is not None:
      self._leave_note(sess, {'status': status,
                              'failure': failures.describe(exc,
                                                           self._run[0])})

  def _root_cause(self, sess, exc):
    """The peer failure behind ``exc`` (a secondary error), or None.

    A peer's own note says most; else a peer that is gone (refused twice)
    or cannot be reached.
    """
    own_error = '%s: %s' % (type(exc).__name__, failures.first_line(exc))
    try:
      snapshot = self.board.read(sess, 2000)
      for i, note in enumerate(snapshot.notes):
        if (i != self.client_index and note and
            note.get('status') != 'ok'):
          return failures.from_peer_note(self.client_labels[i],
                                         note.get('status'),
                                         note.get('failure'))
    except tf.errors.OpError:
      pass  # The board's host may be the one that is gone.
    peers = self.all_peers()
    unreachable = {}
    for attempt in range(reachability.REFUSALS_TO_GONE):
      if attempt:
        time.sleep(0.5)
      for label, reason in reachability.probe_all(peers).items():
        if reason and (attempt == 0 or label in unreachable):
          unreachable[label] = (peers[label], reason)
        else:
          unreachable.pop(label, None)
    for label, (address, reason) in sorted(unreachable.items()):
      if reachability.is_gone(reason):
        return failures.peer_gone(label, address, own_error)
    for label, (address, reason) in sorted(unreachable.items()):
      return failures.peer_unreachable(label, address, reason, own_error)
    return None

  def _note_peer_failure(self, run_failure):
    if self._run is not None:
      self._run[1].peer_failures.append(run_failure)

  def _end_run(self, status, exit_code, run_failure, lines):
    """Ends the task from the watchdog thread (see watchdog.py).

    Records the run, leaves a note and says done (together bounded by
    _LEAVING_SECONDS: the peers may be gone), then os._exit, past the
    TensorFlow call the main thread is stuck in. Returns only if the main
    thread has already recorded the run.
    """
    if self._run is not None:
      _, result, write_record = self._run
      if not write_record(status, exit_code, run_failure):
        return
    for line in lines:
      print(line)
    if self._run is not None and self._run[1].record_path:
      print('Run record: %s' % self._run[1].record_path)
    sys.stdout.flush()
    if self.sess is not None:
      def leave():
        self._leave_note(self.sess, {'status': status,
                                     'failure': run_failure})
        self.signal_done(self.sess, timeout_ms=2000)
      leaving = threading.Thread(target=leave, daemon=True)
      leaving.start()
      leaving.join(_LEAVING_SECONDS)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)  # pylint: disable=protected-access

  # -- reporting

  def timing_starts(self, sess):
    # Without training the global step stands still: no cluster rate.
    training = not (self.params.forward_only or self.params.eval)
    if self.role.is_chief and self.global_step is not None and training:
      self._step_at_start = int(sess.run(self.global_step,
                                         options=liveness.bounded(_RPC_TIMEOUT_MS)))

  def report(self, sess, reporter, times):
    """Lines after the total: this worker's own rate, the chief's total."""
    if self.role.job_name == cluster.WORKER:
      reporter.line('%s images/sec: %.2f (this worker alone; the total '
                    'above is %d workers x this rate)' % (
                        self.role.task_name, times.total_images_per_sec(1),
                        self.role.num_workers))
    if self._step_at_start is None or not times.timed_wall_time:
      return
    steps = int(sess.run(self.global_step,
                         options=liveness.bounded(_RPC_TIMEOUT_MS))) - (
                             self._step_at_start)
    rate = steps * self.images_per_global_step / times.timed_wall_time
    reporter.line('cluster images/sec: %.2f (from the global step: %d '
                  'steps x %d images in %.2f s)' % (
                      rate, steps, self.images_per_global_step,
                      times.timed_wall_time))


class BetweenGraphCoordination(Coordination):
  """Every worker runs its own graph: barrier start, chief initialises.

  ``own_init_ops``: what a non-chief worker initialises itself (its local
  variables; all its variables in collective mode). ``chief_post_init_ops``
  and ``post_init_ops`` run after barrier 1 (see the module docstring).
  The progress board lives beside the barrier.
  """

  def __init__(self, role, params, global_step, images_per_global_step,
               barrier_device, own_init_ops, chief_post_init_ops=(),
               post_init_ops=()):
    super().__init__(role, params, global_step, images_per_global_step,
                     board_device=barrier_device)
    self.barrier = StartBarrier(barrier_device, role.num_workers,
                                role.task_index)
    self.own_init_ops = list(own_init_ops)
    self.chief_post_init_ops = list(chief_post_init_ops)
    self.cluster_post_init_ops = list(post_init_ops)

  def initialize(self, sess, built, restore):
    timeout = self.params.startup_timeout
    if self.role.is_chief:
      with self.doing('initialising the shared variables'):
        sess.run(self.barrier.initializer)
        sess.run(self.board.initializer)
        sess.run(built.init_ops)
        sess.run(built.input_init_ops)
        restore()
    else:
      with self.doing('waiting for the chief (worker0) to initialise the '
                      'cluster'):
        self.barrier.wait_until_created(sess, timeout)
      with self.doing('initialising this worker\'s own variables'):
        sess.run(self.own_init_ops)
        sess.run(built.input_init_ops)
    with self.doing('waiting at the initialisation barrier'):
      self.barrier.arrive_and_wait(sess, 1, timeout, 'initialisation')
    with self.doing('post-initialisation (values from the chief)'):
      if self.role.is_chief and self.chief_post_init_ops:
        sess.run(self.chief_post_init_ops)
      if self.cluster_post_init_ops:
        sess.run(self.cluster_post_init_ops)
      # The mode's own post-init (e.g. tower copies from tower 0) comes
      # last: it must see what the cluster post-init brought in.
      sess.run(built.post_init_ops)
    with self.doing('waiting at the start barrier'):
      self.barrier.arrive_and_wait(sess, 2, timeout, 'start')
    self._start_watching(sess)
