"""A serving task: a ps (or a distributed_all_reduce worker) and its exit.

It starts its server and then only watches. Its clients (the workers; the
controller in distributed_all_reduce) push ARRIVED into this task's signal
queue once their session exists, and DONE as the last thing they do with
the cluster (done_signals.py), on success and on failure. The task exits:
  * with 0 as soon as every client said it is done;
  * with 1 once every client that has not said so is gone: it started
    (it arrived, or answered a probe) and its server then refused
    connections twice in a row: it crashed or was killed;
  * with 4 (unreachable) when, of those, some never appeared within
    --startup_timeout (as a worker whose peer never came), or answered
    nothing at all for as long as a worker waits for a step
    (ClusterRole.step_deadline_seconds: --stall_timeout +
    --stall_shutdown_timeout + a margin): a network partition, not a
    crash. A partition that heals sooner costs nothing: the workers wait
    that long too, and the run goes on.
so, unlike the original's ps, it never has to be killed by hand, and it
never leaves while a live client may still need it.

ps 0 also hosts the progress board (progress_board.py): with no step completed
in the cluster for --stall_timeout it prints a stall report too, like every
training task.
"""

import sys
import time

import tensorflow as tf

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.cluster.task import done_signals
from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks.cluster.watch import peer_failures
from tf_cnn_benchmarks.cluster.task import progress_board
from tf_cnn_benchmarks.cluster.watch import reachability
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster import server
from tf_cnn_benchmarks.cluster.watch import stall_report
from tf_cnn_benchmarks.liveness import early_signals

tf1 = tf.compat.v1

PROBE_EVERY_SECONDS = 1.0
POLL_SECONDS = 0.2


class ClientWatch:
  """Liveness of the clients, from TCP probes of their servers' ports."""

  def __init__(self, clients, startup_timeout, unreachable_after):
    """``unreachable_after``: seconds of silence after which a client that
    cannot be reached counts as lost (None: never; it may still heal)."""
    self.clients = clients              # label -> 'host:port'
    self.startup_timeout = startup_timeout
    self.unreachable_after = unreachable_after
    self.started = time.monotonic()
    self.last_seen = {}                 # label -> time of last answer
    self.reasons = {}                   # label -> why the last probe failed
    self.refusals = reachability.RefusalCount()
    self._next_probe = 0.0

  def arrived(self, label):
    """``label`` said it arrived: as good as an answer to a probe (which
    may never have caught it: done_signals.py)."""
    self.last_seen[label] = time.monotonic()

  def probe(self, labels):
    now = time.monotonic()
    if now < self._next_probe:
      return
    self._next_probe = now + PROBE_EVERY_SECONDS
    reasons = reachability.probe_all(
        {label: self.clients[label] for label in labels}, timeout=0.5)
    for label, reason in reasons.items():
      if reason is None:
        self.last_seen[label] = time.monotonic()
      self.reasons[label] = reason
      # A refusal means "gone" only for a client known to have started
      # (done_signals.py): before it arrived, or answered a probe, its
      # server may just not be up yet. Counting those would leave
      # REFUSALS_TO_GONE stale refusals standing the moment its ARRIVED
      # comes (a ParameterServerStrategy coordinator arrives seconds after
      # its port first refused), and this task would take it for gone.
      if label in self.last_seen:
        self.refusals.saw(label, reason)

  def lost(self, label):
    """(endings status, why) once ``label`` is lost for good, else None
    (while it may still come, or answer again)."""
    now = time.monotonic()
    if label not in self.last_seen:
      if now - self.started > self.startup_timeout:
        # As a worker whose peer never came: unreachable (exit 4).
        return endings.UNREACHABLE, (
            'never appeared within %.0f s (--startup_timeout)' %
            self.startup_timeout)
      return None
    if self.refusals.gone(label):
      return endings.FAILED, ('refuses connections at %s (its process is '
                              'gone)' % self.clients[label])
    silent_for = now - self.last_seen[label]
    if (self.unreachable_after is not None and
        silent_for > self.unreachable_after):
      return endings.UNREACHABLE, 'unreachable for %.0f s at %s (%s): %s' % (
          silent_for, self.clients[label], self.reasons.get(label),
          peer_failures.PARTITION_WORDS)
    return None

  def cut_off(self, lost, own_label):
    """peer_failures.cut_off's failure when this host has no route to a
    client lost as unreachable, else None: then this task's own link is
    down and it is the one cut off, as a worker in its place says
    (peer_failures.lost_peer), not its clients."""
    for label in sorted(lost):
      if (lost[label][0] == endings.UNREACHABLE and
          reachability.no_route_from_here(self.clients[label])):
        return peer_failures.cut_off(own_label, label, self.clients[label],
                                     self.reasons.get(label))
    return None


def leaving_words(lost, cut_off=None):
  """(exit code, words) of a serving task whose every pending client is
  lost; ``lost``: {label: (status, why)} from ClientWatch.lost;
  ``cut_off``: ClientWatch.cut_off's failure, if any."""
  unreachable = sorted(label for label, (status, _) in lost.items()
                       if status == endings.UNREACHABLE)
  details = '; '.join('%s %s' % (label, why)
                      for label, (_, why) in sorted(lost.items()))
  if cut_off:
    return exit_codes.UNREACHABLE, (
        'exiting: %s %s Waited as long as a worker would (%s).' % (
            cut_off['message'], cut_off['hint'], details))
  if unreachable:
    return exit_codes.UNREACHABLE, (
        'exiting: %s unreachable; waited as long as a worker would (%s)' % (
            ', '.join(unreachable), details))
  return exit_codes.RUN_FAILED, 'exiting: %s left without saying done (%s)' % (
      ', '.join(sorted(lost)), details)


class BoardWatch:
  """ps 0's view of the progress board: stall reports, no decisions.

  The training tasks end a stalled run themselves (watchdog.py); once they
  are done or gone, this task exits as usual.
  """

  def __init__(self, role, params, sess, board, labels, clients):
    self.role = role
    self.params = params
    self.sess = sess
    self.board = board
    self.labels = labels
    self.clients = clients
    self._next_read = 0.0
    self._last_completed = None
    self._last_progress = time.monotonic()
    self._reported_at = None

  def check(self):
    now = time.monotonic()
    if not self.params.stall_timeout or now < self._next_read:
      return
    self._next_read = now + PROBE_EVERY_SECONDS
    try:
      if not self.board.exists(self.sess, 2000):
        self._last_progress = now  # Training has not started yet.
        return
      snapshot = self.board.read(self.sess, 2000)
    except tf.errors.OpError:
      return
    if snapshot.completed != self._last_completed:
      self._last_completed, self._last_progress = snapshot.completed, now
      self._reported_at = None
      return
    quiet_for = now - self._last_progress
    shutdown = self.params.stall_shutdown_timeout
    # Reports when the workers do; ending the run is theirs to do.
    if quiet_for < self.params.stall_timeout or stall_report.next_action(
        now, self._reported_at, self.params.stall_timeout,
        shutdown) != stall_report.REPORT:
      return
    self._reported_at = now
    reasons = reachability.probe_all(self.clients, timeout=0.5)
    probes = stall_report.with_frozen(
        {label: (address, reasons[label])
         for label, address in self.clients.items()},
        reachability.frozen_peers(self.clients))
    for line in stall_report.report(
        self.role.task_name, quiet_for, self.params.stall_timeout, snapshot,
        self.labels, probes, None, 'serving variables (a ps takes no steps)',
        quiet_for, shutdown or None):
      print(line)
    sys.stdout.flush()


def _say(role, text):
  print('%s: %s' % (role.task_name, text))
  sys.stdout.flush()


def serve(params, role):
  # No run, so no watchdog: the process's early guard stays on duty (it
  # ends a task blocked in TensorFlow within its grace); the loop below
  # leaves at once. A serving task writes no record.
  early_signals.doing('serving variables')
  num_devices = params.num_gpus if role.job_name == roles.WORKER else 1
  config = server.server_config(role, num_devices)
  role = server.start_server(role, config)
  print(server.device_summary(role))
  clients = {roles.task_label(job, i): roles.task_address(role, job, i)
             for job, i in role.clients()}
  labels_by_index = dict(enumerate(clients))
  hosts_board = (role.job_name == roles.PS and role.task_index == 0 and
                 not role.in_graph)
  graph = tf.Graph()
  with graph.as_default():
    queue = done_signals.done_queue(role.device)
    queued = queue.size()
    count = tf1.placeholder(tf.int32, [])
    take = queue.dequeue_many(count)
    # The same variables (by name) as the workers' board on this task.
    board = (progress_board.ProgressBoard(role.device + '/device:CPU:0',
                                    len(clients), -1)
             if hosts_board else None)
  graph.finalize()
  sess = tf1.Session(role.target, graph=graph, config=config)
  board_watch = (BoardWatch(role, params, sess, board,
                            list(clients),
                            clients) if board is not None else None)
  _say(role, 'serving at %s until %s %s done (or gone)' % (
      role.address, ', '.join(sorted(clients)),
      'is' if len(clients) == 1 else 'are'))
  # A client behind a partition may come back for as long as it would
  # wait for a step itself; the workers' own bound, decided in roles.py.
  watch = ClientWatch(clients, params.startup_timeout,
                      role.step_deadline_seconds)
  done = set()
  while True:
    stopped = early_signals.received()
    if stopped:
      _say(role, 'stopped by %s; exiting' % stopped)
      return exit_codes.INTERRUPTED
    waiting = int(sess.run(queued))
    if waiting:
      for pair in sess.run(take, {count: waiting}):
        try:
          kind, label = done_signals.read_signal(*pair, labels_by_index)
        except done_signals.RefusedSignal as refused:
          _say(role, 'refused a signal in its done queue (%s): no client '
               'of this cluster sent it; something else that reaches this '
               'server wrote to it' % refused)
          continue
        if kind == done_signals.ARRIVED:
          watch.arrived(label)
          continue
        done.add(label)
        _say(role, '%s is done (%d of %d)' % (label, len(done), len(clients)))
    if done >= set(clients):
      _say(role, 'every client is done; exiting')
      return exit_codes.OK
    pending = sorted(set(clients) - done)
    if board_watch is not None:
      board_watch.check()
    watch.probe(pending)
    lost = {label: watch.lost(label) for label in pending}
    if all(lost.values()):
      code, words = leaving_words(lost, watch.cut_off(lost, role.task_name))
      _say(role, words)
      return code
    time.sleep(POLL_SECONDS)
