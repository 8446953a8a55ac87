"""How long a cluster call may wait on a peer before TensorFlow cancels it.

No TensorFlow at import: roles.py decides a task's step deadline before
TensorFlow loads.
"""

# A step may take this much longer than --stall_timeout plus the shutdown
# grace before TensorFlow itself cancels it: the watchdog acts first.
_STEP_BOUND_MARGIN_SECONDS = 30.0
# Bound of one coordination session.run (a poll, a done signal): the peer
# answers in milliseconds when it is there at all.
RPC_TIMEOUT_MS = 10000


def step_deadline_seconds(params):
  """Deadline of one cluster step (None: unbounded).

  The watchdog reports a stall after --stall_timeout and ends the task
  after --stall_shutdown_timeout more; the step's own deadline is a
  backstop just past that. With --stall_shutdown_timeout=0 (report only)
  or --stall_timeout=0 (no stall detection) the user chose to wait.
  """
  if not params.stall_timeout or not params.stall_shutdown_timeout:
    return None
  return (params.stall_timeout + params.stall_shutdown_timeout +
          _STEP_BOUND_MARGIN_SECONDS)


def bounded(timeout_ms):
  """RunOptions of a cluster call that must not wait forever on a peer."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.compat.v1.RunOptions(timeout_in_ms=int(timeout_ms))
