"""Start-up must end: a task whose start-up lasts too long is ended.

Creating the session, initialising, a barrier: when the whole start-up
(deadlines.StartupClock, from the task's server start) has lasted
--startup_timeout plus a grace, the task ends, naming the peers it cannot
reach (TensorFlow cannot cancel session creation; the waits' own bounds,
each what is left of the one start-up bound, normally fire first, and say
more).
"""

from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.liveness import endings
from tf_cnn_benchmarks.cluster.watch import reachability
from tf_cnn_benchmarks.cluster.watch import stall_report

# Start-up activities get this long past --startup_timeout (at most; as
# much again for a short one).
STARTUP_GRACE_SECONDS = 15.0
# How the runtime names the first run of its session (which TensorFlow
# cannot bound).
CREATING_SESSION = 'creating the session'


class StartupGuard:

  def __init__(self, role, startup, prober, session_peers):
    """``startup``: the task's deadlines.StartupClock; ``session_peers``:
    {label: address} the session waits for."""
    self.role = role
    self.startup = startup
    self.timeout = startup.timeout
    self.prober = prober
    self.session_peers = dict(session_peers)

  def check(self, now, doing, doing_for):
    """An Ending once the start-up (in ``doing`` now, for ``doing_for``
    s) has lasted too long; else None."""
    del doing_for  # one activity is never longer than the whole start-up
    bound = self.timeout + min(STARTUP_GRACE_SECONDS, max(3.0, self.timeout))
    doing_for = self.startup.elapsed()
    if doing_for <= bound:
      return None
    missing = stall_report.unreachable_peers(self.prober.probe(now))
    if not missing and doing.startswith(CREATING_SESSION):
      # Every port answers, yet TensorFlow still waits for a response: a
      # peer that accepts connections but is not (or no longer) a working
      # TensorFlow server.
      missing = [(label, address, 'accepts connections but never answered '
                  'TensorFlow\'s session creation')
                 for label, address in sorted(self.session_peers.items())]
    if missing:
      label = missing[0][0]
      return endings.Ending(endings.UNREACHABLE, failures.failure(
          'PeerUnreachable',
          'start-up waited %.0f s while %s (--startup_timeout=%g); '
          'unreachable: %s.' % (
              doing_for, doing, self.timeout, ', '.join(
                  reachability.describe(*m) for m in missing)), label,
          'Start the missing tasks, or check the addresses and that this '
          'host can reach them.'))
    return endings.Ending(endings.STALLED, failures.failure(
        'Stalled', 'start-up waited %.0f s while %s (--startup_timeout=%g); '
        'every peer answers.' % (doing_for, doing, self.timeout),
        self.role.task_name))
