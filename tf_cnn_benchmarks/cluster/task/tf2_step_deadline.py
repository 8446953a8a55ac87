"""The deadline of a tf2 cluster step: past it, its collectives are aborted.

Under MultiWorkerMirroredStrategy a step is one tf.function call that waits
in its all-reduces for every worker. The graph engine's step has a deadline
just past the watchdog's stall shutdown (deadlines.step_deadline_seconds, in
its session.run's RunOptions); a tf.function call takes no deadline, and a
collective's own (CommunicationOptions.timeout_seconds) is too dear: for
every run of a collective with a timeout, TensorFlow starts a detached
thread that sleeps for the whole timeout, woken by nothing when the
collective completes (BaseCollectiveExecutor::ExecuteAsync). At a deadline
of minutes and steps of milliseconds that was ~2 threads per step, 2143
threads at step 1000 (--stall_timeout=15), growing until the process or
the host could start no more.

So the tf2 collectives carry no timeout, and this is their deadline: one
thread per task that, once the step under way has run for the deadline,
aborts the process's collectives (the eager context's
abort_collective_ops, what the strategy's own health check does when a
peer is down). Every collective waiting in the step then fails, and the
step with it (DeadlineExceeded, saying so). The abort lasts: every later
collective of the process fails at once, as the run is over anyway.

The watchdog normally ends a stuck task first (--stall_timeout +
--stall_shutdown_timeout, exit 3 with a stall report); this is the
backstop for a watchdog that cannot (its check blocked), as the step's
deadline is for the graph engine.

No TensorFlow here: the runtime passes ``abort``.
"""

import threading
import time


class StepDeadline:
  """Aborts the step under way once it has run for ``seconds``."""

  def __init__(self, seconds, abort, clock=time.monotonic):
    """``abort(message)`` aborts the process's collectives (called at most
    once, from this class's thread); ``clock()``: seconds, monotonic."""
    self.seconds = seconds
    self._abort = abort
    self._clock = clock
    self._changed = threading.Condition()
    self._step = None      # (its number, when it began) while one runs
    self._thread = None
    self.aborted = None    # the abort's message, once aborted

  def run(self, step, run):
    """``run()`` (step ``step``'s tf.function call) with the deadline on;
    returns what it returns."""
    with self._changed:
      if self._thread is None:
        # One thread for the whole run, started with its first step.
        self._thread = threading.Thread(target=self._watch,
                                        name='tf2-step-deadline',
                                        daemon=True)
        self._thread.start()
      self._step = (step, self._clock())
      self._changed.notify()
    try:
      return run()
    finally:
      with self._changed:
        self._step = None
        self._changed.notify()

  def _watch(self):
    with self._changed:
      while True:
        if self._step is None:
          self._changed.wait()
          continue
        step, began = self._step
        left = began + self.seconds - self._clock()
        if left > 0:
          # Woken early when the step ends (or the next begins).
          self._changed.wait(left)
          continue
        break
    # TensorFlow's error reads "Collective ops is aborted by: <this>".
    self.aborted = (
        'step %d ran past its deadline of %g s '
        '(deadlines.step_deadline_seconds: --stall_timeout + '
        '--stall_shutdown_timeout and a margin) and the watchdog had not '
        'ended the task' % (step, self.seconds))
    self._abort(self.aborted)
