"""How long a cluster call may wait on a peer, and a task on a lost peer.

No TensorFlow at import: roles.py decides a task's step deadline, and the
launcher its grace after a failure, before (or without) loading TensorFlow.
"""

import threading
import time

# A step may take this much longer than --stall_timeout plus the shutdown
# grace before TensorFlow itself cancels it: the watchdog acts first.
_STEP_BOUND_MARGIN_SECONDS = 30.0
# Bound of one coordination session.run (a poll, a done signal): the peer
# answers in milliseconds when it is there at all.
RPC_TIMEOUT_MS = 10000
# Past the stall bound, a task still needs a watchdog tick, its record and
# its leaving (task_exit.LEAVING_SECONDS), slower on a loaded host.
_ENDING_MARGIN_SECONDS = 15.0
# With no stall bound, a lost peer is found only by probes: after the
# cluster was quiet for 3 step times, two refused probes a second apart.
# Enough for steps of a few seconds.
_PROBES_ONLY_SECONDS = 30.0


def _stall_end_seconds(params):
  """When the watchdog ends a task whose cluster made no progress (None:
  never, the user chose to wait: --stall_timeout=0 or
  --stall_shutdown_timeout=0)."""
  if not params.stall_timeout or not params.stall_shutdown_timeout:
    return None
  return params.stall_timeout + params.stall_shutdown_timeout


def step_deadline_seconds(params):
  """Deadline of one cluster step (None: unbounded).

  The watchdog reports a stall after --stall_timeout and ends the task
  after --stall_shutdown_timeout more; the step's own deadline is a
  backstop just past that.
  """
  stall_end = _stall_end_seconds(params)
  if stall_end is None:
    return None
  return stall_end + _STEP_BOUND_MARGIN_SECONDS


def lost_peer_end_seconds(params):
  """How long after a task failed the others may take to end by themselves.

  A task that lost a peer it cannot train without ends by itself, naming
  the peer: at once on its failure note, within seconds when probes find
  its port closed, and at the latest when the watchdog ends the stall it
  causes. The launcher gives the survivors this long before stopping them
  (task_processes.py): stopping them sooner would replace their own
  ending, which names the lost peer, with "interrupted".
  """
  stall_end = _stall_end_seconds(params)
  if stall_end is None:
    return _PROBES_ONLY_SECONDS
  return stall_end + _ENDING_MARGIN_SECONDS


def at_once(calls, timeout_ms):
  """Runs each of ``calls`` in a thread of its own and waits for them all
  until one shared deadline, a second past ``timeout_ms`` (each call is
  meant to be bounded by it itself). A call still running then is left to
  end in its daemon thread: a TensorFlow call that is the first of its
  graph on a task registers that graph there first, with no deadline of
  its own, and a frozen task never answers. Waiting for the threads one
  after another would let N silent tasks cost N deadlines. Returns whether
  every call finished."""
  threads = [threading.Thread(target=call, daemon=True) for call in calls]
  for thread in threads:
    thread.start()
  deadline = time.monotonic() + timeout_ms / 1000.0 + 1.0
  for thread in threads:
    thread.join(max(0.0, deadline - time.monotonic()))
  return not any(thread.is_alive() for thread in threads)


def bounded(timeout_ms):
  """RunOptions of a cluster call that must not wait forever on a peer."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.compat.v1.RunOptions(timeout_in_ms=int(timeout_ms))


class StartupClock:
  """One --startup_timeout for a task's whole start-up.

  A task starts in several waits one after another (its peers' ports, the
  session, the chief's initialisation, two barriers); each takes only what
  is left of this one bound, and the start-up guard ends the task once
  the whole start-up has lasted it (plus the guard's grace), so the waits
  never add up to several times --startup_timeout. It runs from ``start``
  (the first wait on a peer: building the graph before is local work).
  """

  def __init__(self, timeout, clock=time.monotonic):
    self.timeout = timeout
    self._clock = clock
    self._started = None

  def start(self):
    self._started = self._clock()

  def elapsed(self):
    return 0.0 if self._started is None else self._clock() - self._started

  def left(self):
    """Seconds this start-up may still wait (0 once it is spent)."""
    return max(0.0, self.timeout - self.elapsed())
