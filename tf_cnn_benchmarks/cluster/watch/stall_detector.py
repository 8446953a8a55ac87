"""No step anywhere, or this task's own work stuck: report, then end.

With no progress anywhere in the cluster for --stall_timeout (or this
task's own work, e.g. a checkpoint save, stuck that long) the task prints
a stall report (stall_report.py words it); --stall_shutdown_timeout later,
still stuck, it ends: "stalled" (exit 3), or "unreachable" (exit 4) when a
peer cannot be reached (the peer lost first is then the cause).

The task a stall is blamed on: a peer that is *frozen* (its port accepts
connections, its server answers nothing: a stopped process) above all,
since the board cannot show it (a ps holds no place there, and a worker
may freeze inside a step, counted as started); else the client behind
the others on the board; else this task. The frozen check is a gRPC call
per peer (reachability.frozen_peers), so it runs only here, on the
watchdog's thread, at the report and at the end.
"""

from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks.cluster.watch import stall_report


class StallDetector:

  def __init__(self, role, params, watch, say):
    """``watch``: the ClusterWatch (board readings, peers); ``say(lines)``
    prints."""
    self.role = role
    self.params = params
    self.watch = watch
    self._say = say
    self._reported_at = None
    self._frozen_at_report = None  # peers frozen when the stall was reported

  def forget_report(self):
    """Training ended: a new stall (of this task's own work) starts over."""
    self._reported_at = None
    self._frozen_at_report = None

  def check(self, now, training, doing, doing_for):
    """An Ending when the stall has outlasted its report; else None."""
    stall_timeout = self.params.stall_timeout
    if not stall_timeout:
      return None
    quiet_for = now - self.watch.last_progress if training else doing_for
    if quiet_for < stall_timeout and doing_for < stall_timeout:
      if self._reported_at is not None:
        self._say(['Progress resumed after the stall report; carrying on.'])
        self._reported_at = None
      return None
    action = stall_report.next_action(now, self._reported_at, stall_timeout,
                                      self.params.stall_shutdown_timeout)
    if action == stall_report.REPORT:
      self._say(self._report(now, training, quiet_for, doing, doing_for))
      self._reported_at = now
    elif action == stall_report.END:
      return self._ending(now, training, quiet_for, doing, doing_for)
    return None

  def _probes(self, now, training, frozen=None):
    """Probes worth reporting: while training (once it has ended, peers
    leave normally); with ``frozen`` ({label: reason}) in place of the TCP
    probe's "fine"."""
    if not training:
      return {}
    return stall_report.with_frozen(self.watch.prober.probe(now),
                                    frozen or {})

  def _frozen(self, training):
    """{label: reason} of the peers that are frozen (training only)."""
    return self.watch.prober.frozen() if training else {}

  def _waiting(self, doing):
    return stall_report.waiting_for(self.role, doing,
                                    self.watch.behind_labels())

  def _report(self, now, training, quiet_for, doing, doing_for):
    watch = self.watch
    shutdown = self.params.stall_shutdown_timeout
    self._frozen_at_report = self._frozen(training)
    return stall_report.report(
        self.role.task_name, quiet_for, self.params.stall_timeout,
        watch.snapshot, watch.labels,
        self._probes(now, training, self._frozen_at_report),
        watch.board_error, self._waiting(doing), doing_for,
        shutdown if shutdown else None,
        now - watch.snapshot_at if watch.snapshot_at else 0.0)

  def _ending(self, now, training, quiet_for, doing, doing_for):
    # A peer this task cannot reach explains the stall.
    lost = self.watch.prober.lost_peer_ending(
        None, self._probes(now, training), self.watch.finished_normally)
    if lost is not None:
      return lost
    frozen = self._frozen(training)
    if self._frozen_at_report is not None:
      # Blamed only if it was frozen at the report too, --stall_shutdown_
      # timeout earlier: a live server slow to answer once on a loaded
      # host is not frozen.
      frozen = {label: why for label, why in frozen.items()
                if label in self._frozen_at_report}
    task = stall_report.culprit(self.role.task_name, self.watch.snapshot,
                                self.watch.labels, frozen)
    if task in frozen:
      what = '%s is frozen: %s; the others wait for it (%s: %s)' % (
          task, frozen[task], self.role.task_name, self._waiting(doing))
    elif task == self.role.task_name:
      what = '%s is stuck: %s, for %.0f s' % (task, self._waiting(doing),
                                              doing_for)
    else:
      what = ('%s is stuck and the others wait for it (%s: %s)'
              % (task, self.role.task_name, self._waiting(doing)))
    return endings.Ending(endings.STALLED, failures.failure(
        'Stalled', 'no step completed in the cluster for %.0f s; %s.'
        % (quiet_for, what), task,
        'Look at %s\'s output and state (e.g. py-spy dump, or its stall '
        'report); raise --stall_timeout if its steps are just slow.' % task))
