"""What the training task of a tf2 cluster does around the tf2 engine's steps.

--engine=tf2 runs two tf.distribute strategies over a cluster
(variable_update/modes.py, ``tf2_cluster_strategy``):

  * collective_all_reduce, distributed_all_reduce:
    MultiWorkerMirroredStrategy. Every worker runs the same tf.function
    step, its gradients all-reduced with the others' by collective ops
    over gRPC; no controller, no ps. Worker 0 is the chief and hosts
    TensorFlow's coordination service.
  * parameter_server (--sync_updates=barrier, or --cross_replica_sync=
    False): ParameterServerStrategy. The
    cluster's controller task is its coordinator (TensorFlow's "chief",
    roles.TF2_COORDINATOR) and the one task that trains: a
    ClusterCoordinator schedules each step on a worker, which applies its
    own gradient to the variables on the ps tasks. The workers and ps
    tasks only serve (serving_task.py), until the coordinator says done.

The graph engine's cluster runtime (runtime.py) wraps a session; this one
wraps the strategy, and keeps everything else of that runtime: the
cluster's checks on the run's watchdog (watch/task_checks.py: start-up, peers,
stalls), the progress board (tf2_board.py: in the coordination service's
key-value store; in the coordinator itself, the only client, under
ParameterServerStrategy), the exit notes and the root cause search, the
"done" signals to serving tasks, the cluster's rate. What bounds each
wait:

  * joining: each worker waits until every other worker's port accepts,
    its own held by a placeholder (port_placeholder.py), for at most
    --startup_timeout (a worker that never comes is named, exit 4); then
    MultiWorkerMirroredStrategy starts this task's server and TensorFlow
    waits for every worker to register with the coordination service
    (``cluster_register_timeout``: a wait that holds the interpreter, so
    a signal is seen only once it ends, hence the wait before it). The
    coordinator waits for
    every serving task's port as the graph engine's tasks do, for
    --startup_timeout, before the strategy connects. The start-up guard
    is the backstop of both;
  * a peer that dies: its port refuses the watchdog's probes within
    seconds (exit 1, named). Under MultiWorkerMirroredStrategy the
    coordination service, which stops hearing its heartbeats after
    HEARTBEAT_TIMEOUT_SECONDS, also aborts the collectives that wait for
    it. Under ParameterServerStrategy a lost worker is survivable, barrier
    or not: the coordinator runs its steps on the others and the run goes
    on (roles.ClusterRole.lockstep, can_train_without); a lost ps ends it;
  * a step that stalls (a peer alive but stuck): the watchdog's stall
    report, then the end after --stall_shutdown_timeout (exit 3, naming
    the worker the board shows behind, or a frozen peer). Under
    MultiWorkerMirroredStrategy the step's deadline, just past that, is
    the backstop (tf2_step_deadline.py: it aborts the step's collectives,
    which carry no timeout of their own).

TensorFlow's preemption notifier, started with the coordination agent,
takes SIGTERM over; the run's stop request takes it back (liveness/
stop_request.py), so SIGTERM still stops a task within its bound.
"""

import contextlib
import dataclasses
import re
import sys

import tensorflow as tf
# The coordination service's configuration has no public Python name;
# MultiWorkerMirroredStrategy configures it through the eager context too.
from tensorflow.python.eager import context  # pylint: disable=g-direct-tensorflow-import
from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2  # pylint: disable=g-direct-tensorflow-import

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.cluster.task import cluster_rate
from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster.task import done_signals
from tf_cnn_benchmarks.cluster.task import port_placeholder
from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks.cluster.watch import reachability
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.task import runtime
from tf_cnn_benchmarks.cluster import server
from tf_cnn_benchmarks.cluster.task import tf2_board
from tf_cnn_benchmarks.cluster.task import tf2_sigterm_notice
from tf_cnn_benchmarks.cluster.task import tf2_step_deadline
from tf_cnn_benchmarks.cluster.watch import task_checks
from tf_cnn_benchmarks.engine_tf2 import strategies

# A task that sent the coordination service no heartbeat for this long is
# unhealthy: the service aborts the collectives of every other task.
# TensorFlow's own default; a busy 2-core host keeps it easily.
HEARTBEAT_TIMEOUT_SECONDS = 10.0
# The leader of the coordination service (and the chief): worker 0.
_LEADER = '/job:worker/replica:0/task:0'
# The coordination service's words for tasks it stopped hearing from; the
# tasks follow.
_UNHEALTHY = 'stopped sending heartbeats'
# A heartbeat to the leader that failed: the RPC's name in the error.
_HEARTBEAT_RPC = 'CoordinationService/Heartbeat'
# "/job:worker/replica:0/task:1" in TensorFlow's messages -> worker1.
_TASK_RE = re.compile(r'/job:(\w+)/replica:\d+/task:(\d+)')


class Tf2ClusterRuntime(runtime.ClusterRuntime):
  """The training task of a tf2 cluster; see above. ``role.in_graph``:
  this task is ParameterServerStrategy's coordinator (roles.has_controller).
  """

  def __init__(self, role, params):
    super().__init__(role, params)
    self._strategy = self._coordinator = None
    self._training = False
    # MultiWorkerMirroredStrategy's steps, bounded (None: unbounded, or
    # a coordinator: ParameterServerStrategy's steps run no collectives).
    self._step_deadline = None
    if role.step_deadline_seconds and not role.in_graph:
      self._step_deadline = tf2_step_deadline.StepDeadline(
          role.step_deadline_seconds, _abort_collectives)

  def strategy(self):
    """What the tf2 engine trains under (strategies.Chosen): the strategy,
    its name, and a coordinator's ClusterCoordinator (else None)."""
    return strategies.Chosen(self._strategy,
                             self.role.mode.tf2_cluster_strategy,
                             self._coordinator)

  def begin(self, rc, run_watch):
    """Joins the cluster (starts the strategy); returns rc with the role."""
    self.run_watch = run_watch
    role, params = self.role, self.params
    self.labels = done_signals.client_labels(role)
    self.client_index = self.labels.index(role.task_name)
    peers = role.all_peers()
    # Joining the cluster is its start-up: one --startup_timeout for it.
    self.startup = deadlines.StartupClock(params.startup_timeout)
    self.startup.start()
    self.checks = task_checks.TaskChecks(
        role, params, self.startup, peers, peers, run_watch,
        self._note_peer_failure, note_stragglers=self._note_stragglers)
    self.checks.start()
    try:
      strategies.prepare_runtime(params)
      if self.role.in_graph:
        self._strategy = self._coordinate(run_watch, peers)
      else:
        # TensorFlow's registration barrier holds the interpreter (a
        # signal waits for its timeout), so the wait for the others is
        # done first, here (port_placeholder.py).
        with port_placeholder.held(roles.split_address(role.address)[1]):
          self.wait_for_peers(peers)
          if self._fault is not None:
            self._fault.before_join(run_watch.say)
        with run_watch.phase('server_start', 'joining the cluster '
                             '(TensorFlow waits for every worker to '
                             'register: %s)' % ', '.join(sorted(peers))):
          self._strategy = self._join(run_watch)
      run_watch.say('Cluster task %s (%s); %s' % (
          role.task_name, role.address, '; '.join(roles.describe(role))))
      # The server TensorFlow started for the strategy: where it listens.
      self.role = server.measured_exposure(role, run_watch.say)
      run_watch.say(self._devices_line())
      sys.stdout.flush()
      rc = self._board_and_rate(rc)
    except Exception:
      # No board or "done" yet to tell the peers with (running() does,
      # from here on): they find this task gone.
      self.checks.stop()
      raise
    run_watch.exit.attach_leave(
        lambda status, failure: self._leave(None, status, failure))
    return rc

  def _board_and_rate(self, rc):
    """The progress board, the "done" senders and the cluster's rate of
    a task that joined; returns rc with the role."""
    role = self.role
    if role.in_graph:
      # The coordinator is the one client: its board stays here. A
      # global step is one worker's step (each applies its own).
      self.board = tf2_board.LocalBoard()
      self._board_host = role.task_name
      self.done = _DoneSenders(role)
      # Proof that it started, which the serving tasks' probes may miss.
      self.done.arrive(None)
      images_per_global_step = rc.batch_size_per_device
    else:
      # Worker 0 hosts the coordination service, so the board too.
      self.board = tf2_board.KeyValueBoard(len(self.labels),
                                           self.client_index)
      self._hosts_board = role.is_chief
      self._board_host = tasks_named(_LEADER)[0]
      images_per_global_step = rc.global_batch_size
    self.board.publish_initial(deadlines.RPC_TIMEOUT_MS)
    self._board_in_step = False
    self.rate = cluster_rate.ClusterRate(
        role, rc.mode, lambda trainer: trainer.global_step(),
        images_per_global_step)
    # A failure before the engine attaches the run is described with this
    # (attach_run replaces it).
    self._rc = dataclasses.replace(rc, cluster=role)
    return self._rc

  def _devices_line(self):
    name = self.role.task_name
    if self.role.in_graph:
      return ('Devices: %s: coordinates %s (one replica each), the '
              'variables on %s' % (
                  name, ', '.join(roles.task_label(roles.WORKER, i)
                                  for i in range(self.role.num_workers)),
                  ', '.join(roles.task_label(roles.PS, i)
                            for i in range(self.role.num_ps))))
    return 'Devices: %s: %s (one replica per worker)' % (
        name, ', '.join(self._strategy.extended.worker_devices))

  def _resolver(self, task_type):
    role = self.role
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(role.tf_cluster_def()), task_type=task_type,
        task_id=role.task_index, rpc_layer=role.protocol)

  def _join(self, run_watch):
    """MultiWorkerMirroredStrategy over the cluster, this task's server
    started and every worker registered."""
    role, params = self.role, self.params
    configure_coordination_service(role, params.startup_timeout)
    # No timeout_seconds: a collective with a timeout costs a thread per
    # run, sleeping for the whole timeout (tf2_step_deadline.py), so the
    # step's deadline is kept by run_function_step instead; the start's
    # collectives (the variables' initial values) are the start-up
    # guard's.
    options = tf.distribute.experimental.CommunicationOptions()
    try:
      # TensorFlow installs its SIGTERM handler, then waits for the others.
      with run_watch.stop_request.kept():
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            cluster_resolver=self._resolver(role.job_name),
            communication_options=options)
    except tf.errors.OpError as e:
      raise self._join_failure(e, params.startup_timeout) from None
    # A SIGTERM its handler took meanwhile is given back.
    tf2_sigterm_notice.watch(run_watch.stop_request, role.job_name,
                             role.task_index, run_watch.say)
    return strategy

  def _coordinate(self, run_watch, peers):
    """ParameterServerStrategy, with its coordinator, once every serving
    task accepts connections (TensorFlow would wait for them unbounded)."""
    names = self.wait_for_peers(peers)
    with run_watch.phase('server_start', 'connecting to the cluster (%s)'
                         % names):
      strategy = tf.distribute.experimental.ParameterServerStrategy(
          self._resolver(roles.TF2_COORDINATOR))
      self._coordinator = (
          tf.distribute.experimental.coordinator.ClusterCoordinator(strategy))
      return strategy

  def _join_failure(self, error, timeout):
    """The ClusterWaitTimeout naming who never registered, or ``error``."""
    named = [label for label in tasks_named(str(error))
             if label != self.role.task_name]
    probes = reachability.probe_all(self.role.all_peers())
    unreachable = [label for label, reason in sorted(probes.items())
                   if reason]
    missing = named + [l for l in unreachable if l not in named]
    if not missing and isinstance(error, tf.errors.DeadlineExceededError):
      # Registration goes to the leader: it is the one that did not answer.
      missing = [roles.task_label(roles.WORKER, 0)]
    if not missing:
      return error
    peers = self.role.all_peers()
    return reachability.ClusterWaitTimeout(
        '%s never registered with the cluster within %.0f s '
        '(--startup_timeout; TensorFlow: %s); %s. Start the missing tasks, '
        'or check the addresses and that this host can reach them.' % (
            ', '.join(missing), timeout,
            failures.first_line(error).split('. ')[0],
            'unreachable: ' + ', '.join(
                reachability.describe(l, peers[l], probes[l])
                for l in unreachable) if unreachable else
            'every peer\'s port answers'), missing)

  # -- the run

  @contextlib.contextmanager
  def running(self):
    """Around everything the run does once this task joined (the input,
    the tf2 engine's build and steps): a failure is noted on the board (or
    its root cause found in a peer); on the way out this task leaves its
    note, the board's host waits for the others' (the part of the
    coordination service's shutdown barrier this cluster needs: bounded,
    and a peer that is gone does not hold it up), and a coordinator tells
    the serving tasks it is done."""
    try:
      yield
      self._leave_note(None, {'status': 'ok'})
    except Exception as e:
      self._on_failure(None, e)
      raise
    finally:
      self._wait_for_the_others(None, runtime.BOARD_HOST_WAIT_SECONDS)
      if self.done is not None:
        self.done.send(None)
      self.checks.stop()

  def function_steps(self):
    """Around the tf2 engine's build and steps: running() covers them."""
    return contextlib.nullcontext()

  def _on_failure(self, sess, exc):
    """The graph runtime's failure path, and one verdict it cannot reach:
    the coordination service's. A worker frozen (stopped, wedged) still
    accepts connections, so no TCP probe finds it, and it stops no step
    on the board before the collectives are aborted: the root cause
    search's gRPC asks name it (root_cause.py); when they do not, the
    service's words do, having heard no heartbeat from it for
    HEARTBEAT_TIMEOUT_SECONDS. A frozen leader (worker 0) hosts the board:
    the search is told so first, so that it does not wait there."""
    leader_frozen = self._leader_frozen(str(exc))
    if leader_frozen:
      # The board lives in its store, whose calls have no deadline: the
      # root cause search below must not wait there for ever.
      self.board.host_frozen()
    super()._on_failure(sess, exc)
    if (getattr(exc, 'root_cause', None) is not None or
        getattr(exc, 'status', None) is not None):
      return
    label, words = self._frozen_peer(str(exc))
    if label is None:
      return
    exc.root_cause = failures.failure(
        'Stalled', '%s is frozen: %s while its port still accepts '
        'connections (a stopped or wedged process); the all-reduce waited '
        'for it.' % (label, words), label,
        'Look at %s\'s state (e.g. py-spy dump; a process stopped by '
        'SIGSTOP or a debugger).' % label)
    exc.status, exc.exit_code = endings.STALLED, exit_codes.STALLED
    self._leave_note(sess, {'status': exc.status,
                            'failure': exc.root_cause})

  def _leader_frozen(self, message):
    """Did this task's heartbeat to worker 0, the coordination service's
    leader, time out while worker 0's port still accepts?"""
    leader = tasks_named(_LEADER)[0]
    peers = self.role.all_peers()
    return (_HEARTBEAT_RPC in message and leader in peers and
            reachability.probe(peers[leader]) is None)

  def _frozen_peer(self, message):
    """(the frozen peer the coordination service's words name, how they
    say it), or (None, None).

    The service's leader, worker 0, names a worker it heard no heartbeat
    from. When the leader itself is frozen, nobody can say so for it: the
    other workers' own heartbeats to it time out and abort their
    collectives with DeadlineExceeded (seeds 543 and 767 of the chaos
    soak); the root cause search's gRPC asks name it then
    (root_cause.py), after _on_failure told the board its host is
    frozen."""
    peers = self.role.all_peers()
    if _UNHEALTHY in message:
      unhealthy = [label for label in tasks_named(
          message.partition(_UNHEALTHY)[2]) if label in peers]
      if unhealthy:
        return unhealthy[0], ('it sent the coordination service no '
                              'heartbeat for %.0f s' %
                              HEARTBEAT_TIMEOUT_SECONDS)
    return None, None

  def run_function_step(self, run):
    """One step of the tf2 engine, watched and counted on the board."""
    if not self._training:
      # From the first step the board shows progress: the watchdog
      # judges peers and stalls by it (before, the start-up guard).
      self._training = True
      self.checks.training_started(None, self.board, self.labels,
                                     self.client_index)
    if self._step_deadline is None:
      return self._counted_step(None, lambda feed: run())
    # The deadline covers the tf.function call (each attempt of it), not
    # the board's bounded calls around it or a test fault's hold.
    return self._counted_step(None, lambda feed: self._step_deadline.run(
        self._steps_run, run))


class _DoneSenders:
  """A coordinator's ARRIVED and "done" to every serving task
  (done_signals.py).

  This process's eager context belongs to the strategy, so each signal is
  a tf.compat.v1 session of its own, on the serving task's own server
  (seeing only that task), in a graph of its own; a task whose port
  refuses is skipped (it is gone), and every send is bounded.
  """

  def __init__(self, role):
    self._tasks = []
    for job, index in role.serving_tasks():
      device = '/job:%s/task:%d' % (job, index)
      graph = tf.Graph()
      with graph.as_default():
        queue = done_signals.done_queue(device)
        ops = {kind: done_signals.signal_op(queue, kind, role.task_index)
               for kind in done_signals.KINDS}
      self._tasks.append((roles.task_address(role, job, index), device,
                          graph, ops))

  def arrive(self, sess, timeout_ms=done_signals.DONE_TIMEOUT_MS):
    del sess
    self._send(done_signals.ARRIVED, timeout_ms)

  def send(self, sess, timeout_ms=done_signals.DONE_TIMEOUT_MS, only=None,
           skip=None):
    """As done_signals.DoneSignals.send."""
    del sess
    self._send(done_signals.DONE, timeout_ms, only, skip)

  def _send(self, kind, timeout_ms, only=None, skip=None):
    def tell(address, device, graph, ops):
      if reachability.probe(address) is not None:
        return
      try:
        # Never closed: Session.close() may block once a peer is gone.
        tf.compat.v1.Session(
            'grpc://' + address, graph=graph,
            config=tf.compat.v1.ConfigProto(device_filters=[device])).run(
                ops[kind], options=deadlines.bounded(timeout_ms))
      except tf.errors.OpError:
        pass  # Gone meanwhile: it notices our absence by itself.
    deadlines.at_once([lambda task=task: tell(*task)
                       for task in self._tasks
                       if done_signals.chosen(task[1], only, skip)],
                      timeout_ms)


def _abort_collectives(message):
  """Fails every collective of this process, now and from now on, with
  DeadlineExceeded and ``message`` (tf2_step_deadline.StepDeadline's
  abort)."""
  context.context().abort_collective_ops(tf.errors.DEADLINE_EXCEEDED,
                                         message)


def configure_coordination_service(role, startup_timeout):
  """The coordination service MultiWorkerMirroredStrategy starts (it would
  otherwise configure one of its own, with no start-up bound): led by
  worker 0, over every worker, registration bounded by --startup_timeout
  and done as a barrier (a task returns once every worker registered, or
  fails naming those that did not), heartbeats as above. Before the
  strategy, which reads it when it starts TensorFlow's runtime."""
  ctx = context.context()
  ctx.configure_coordination_service(
      service_type='standalone', service_leader=_LEADER,
      enable_health_check=False,
      cluster_register_timeout_in_ms=int(startup_timeout * 1000),
      heartbeat_timeout_in_ms=int(HEARTBEAT_TIMEOUT_SECONDS * 1000),
      coordinated_jobs=[coordination_config_pb2.CoordinatedJob(
          name=roles.WORKER, num_tasks=role.num_workers)])
  ctx.coordination_service.cluster_register_with_barrier = True


def tasks_named(message):
  """Labels ('worker1') of the tasks a TensorFlow message names."""
  found = []
  for job, index in _TASK_RE.findall(message):
    label = roles.task_label(job, int(index))
    if label not in found:
      found.append(label)
  return found
