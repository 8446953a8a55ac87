"""What a training task of a tf2 cluster does around the tf2 engine's steps.

--engine=tf2 with collective_all_reduce or distributed_all_reduce is
MultiWorkerMirroredStrategy: every worker runs the same tf.function step,
its gradients all-reduced with the others' by collective ops over gRPC.
There is no controller and no ps task; worker 0 is the chief and hosts
TensorFlow's coordination service.

The graph engine's cluster runtime (runtime.py) wraps a session; this one
wraps the strategy, and keeps everything else of that runtime: the
cluster's checks on the run's watchdog (watchdog.py: start-up, peers,
stalls), the progress board (here in the coordination service's key-value
store: tf2_board.py), the exit notes and the root cause search, the
cluster's rate. What bounds each wait:

  * joining: the strategy starts this task's server and TensorFlow waits
    for every worker to register with the coordination service, at most
    --startup_timeout (``cluster_register_timeout``; a worker that never
    comes is named, exit 4); the start-up guard is the backstop;
  * a peer that dies: its port refuses the watchdog's probes within
    seconds (exit 1, named), and the coordination service, which stops
    hearing its heartbeats after HEARTBEAT_TIMEOUT_SECONDS, aborts the
    collectives that wait for it;
  * a step that stalls (a peer alive but stuck): the watchdog's stall
    report, then the end after --stall_shutdown_timeout (exit 3, naming
    the worker the board shows behind); every collective also carries
    the step's deadline (CommunicationOptions.timeout_seconds) as a
    backstop just past that.

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

from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.cluster import cluster_rate
from tf_cnn_benchmarks.cluster import done_signals
from tf_cnn_benchmarks.cluster import reachability
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster import runtime
from tf_cnn_benchmarks.cluster import server
from tf_cnn_benchmarks.cluster import tf2_board
from tf_cnn_benchmarks.cluster import watchdog
from tf_cnn_benchmarks.engine_tf2 import strategies
from tf_cnn_benchmarks.variable_update import modes

# A task that sent the coordination service no heartbeat for this long is
# unhealthy: the service aborts the collectives of every other task.
# TensorFlow's own default; a busy 2-core host keeps it easily.
HEARTBEAT_TIMEOUT_SECONDS = 10.0
# The leader of the coordination service (and the chief): worker 0.
_LEADER = '/job:worker/replica:0/task:0'
# "/job:worker/replica:0/task:1" in TensorFlow's messages -> worker1.
_TASK_RE = re.compile(r'/job:(\w+)/replica:\d+/task:(\d+)')


class Tf2ClusterRuntime(runtime.ClusterRuntime):
  """A worker of a tf2 MultiWorkerMirroredStrategy cluster; see above."""

  def __init__(self, role, params):
    super().__init__(role, params)
    self._strategy = None
    self._training = False

  def strategy(self):
    """(the strategy, its name): what the tf2 engine trains under."""
    return self._strategy, modes.MULTI_WORKER_MIRRORED

  def begin(self, rc, run_watch):
    """Joins the cluster (starts the strategy); returns rc with the role."""
    self.run_watch = run_watch
    role, params = self.role, self.params
    self.labels = done_signals.client_labels(role)
    self.client_index = self.labels.index(role.task_name)
    peers = role.all_peers()
    self.watchdog = watchdog.Watchdog(
        role, params, peers, peers, run_watch, self._note_peer_failure,
        note_stragglers=self._note_stragglers)
    self.watchdog.start()
    try:
      with run_watch.phase('server_start', 'joining the cluster (TensorFlow '
                           'waits for every worker to register: %s)' %
                           ', '.join(sorted(peers))):
        self._strategy = self._join(run_watch)
    except Exception:
      self.watchdog.stop()
      raise
    self.role = dataclasses.replace(role, target='grpc://' + role.address)
    run_watch.tell('Cluster task %s (%s); %s' % (
        role.task_name, role.address, '; '.join(roles.describe(role))))
    warning = server.exposure_warning(role)
    if warning:
      run_watch.tell(warning)
    run_watch.tell('Devices: %s: %s (one replica per worker)' % (
        role.task_name, ', '.join(self._strategy.extended.worker_devices)))
    sys.stdout.flush()
    # Worker 0 hosts the coordination service, so the board too.
    self.board = tf2_board.KeyValueBoard(len(self.labels), self.client_index)
    self._hosts_board = role.is_chief
    self.board.publish_initial()
    self._board_in_step = False
    self.rate = cluster_rate.ClusterRate(
        role, params, lambda trainer: trainer.global_step(),
        rc.global_batch_size)
    run_watch.exit.attach_leave(
        lambda status, failure: self._leave(None, status, failure))
    return dataclasses.replace(rc, cluster=self.role)

  def _join(self, run_watch):
    """MultiWorkerMirroredStrategy over the cluster, this task's server
    started and every worker registered."""
    role, params = self.role, self.params
    strategies.set_threads(params)
    configure_coordination_service(role, params.startup_timeout)
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(role.tf_cluster_def()), task_type=role.job_name,
        task_id=role.task_index, rpc_layer=role.protocol)
    options = tf.distribute.experimental.CommunicationOptions(
        timeout_seconds=role.step_deadline_seconds)
    try:
      # TensorFlow installs its SIGTERM handler, then waits for the others.
      with run_watch.stop_request.kept():
        return tf.distribute.MultiWorkerMirroredStrategy(
            cluster_resolver=resolver, communication_options=options)
    except tf.errors.OpError as e:
      raise self._join_failure(e, params.startup_timeout) from None

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
  def function_steps(self):
    """Around the tf2 engine's build and steps: a failure is noted on the
    board (or its root cause found in a peer); on the way out this task
    leaves its note, and the board's host waits for the others' (the part
    of the coordination service's shutdown barrier this cluster needs:
    bounded, and a peer that is gone does not hold it up)."""
    try:
      yield
      self._leave_note(None, {'status': 'ok'})
    except Exception as e:
      self._on_failure(None, e)
      raise
    finally:
      self._wait_for_the_others(None, runtime.BOARD_HOST_WAIT_SECONDS)
      self.watchdog.stop()

  def run_function_step(self, run):
    """One step of the tf2 engine, watched and counted on the board."""
    if not self._training:
      # From the first step the board shows progress: the watchdog
      # judges peers and stalls by it (before, the start-up guard).
      self._training = True
      self.watchdog.training_started(None, self.board, self.labels,
                                     self.client_index)
    return self._counted_step(None, run)


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
