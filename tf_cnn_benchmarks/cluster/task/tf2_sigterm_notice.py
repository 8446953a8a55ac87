"""A SIGTERM that TensorFlow's preemption notifier took, given back to the run.

MultiWorkerMirroredStrategy's join starts the coordination agent, whose
preemption notifier installs a C-level SIGTERM handler of its own, and then
waits in the registration barrier holding the interpreter. The run's
handlers are put back every few milliseconds (stop_request.kept), but not
while the join holds the interpreter: a SIGTERM then reaches only the
notifier, which does not stop the process (the chaos soak's seed 6015: a
worker trained on for minutes). What the notifier does with it is public:
it stores the task's name, ``/job:worker/task:N``, under one key of the
coordination service (TensorFlow's own PreemptionWatcher reads the same
key), within a second.

``watch`` waits for that key in a thread of its own (the get releases the
interpreter) and, when it names this task, delivers the SIGTERM to the
run's stop request, which then acts on it as on any other. The key is
written once per cluster: a second task's SIGTERM taken by the notifier
in the same join is not seen (its own handlers are back by then for any
later one).
"""

import signal
import threading
import time

import tensorflow as tf
# The coordination service's key-value store has no public Python name;
# MultiWorkerMirroredStrategy itself reaches it through the eager context.
from tensorflow.python.eager import context  # pylint: disable=g-direct-tensorflow-import

# TensorFlow's key (context_distributed_manager.cc; failure_handling.py
# reads it as PREEMPTION_KEY).
NOTICE_KEY = 'TF_DEFAULT_PREEMPTION_NOTICE_KEY'
# One get's wait; the thread asks again for as long as the process lives
# (after an error, a second later: a get made while the service is still
# settling must not end the watch; once the process ends, so does it).
_WAIT_MS = 60000
_RETRY_SECONDS = 1.0


def watch(stop_request, job_name, task_index, say):
  """Starts the thread that gives this task's notified SIGTERM back to
  ``stop_request`` (saying so with ``say``)."""
  me = '/job:%s/task:%d' % (job_name, task_index)

  def wait_for_the_notice():
    ctx = context.context()
    while True:
      try:
        who = ctx.get_config_key_value(NOTICE_KEY, timeout_in_ms=_WAIT_MS)
      except tf.errors.DeadlineExceededError:
        continue
      except tf.errors.OpError:
        time.sleep(_RETRY_SECONDS)
        continue
      if who == me:
        say('TensorFlow\'s preemption notifier took a SIGTERM while the '
            'cluster\'s join held the interpreter: stopping for it.')
        stop_request.deliver(signal.SIGTERM)
      return

  threading.Thread(target=wait_for_the_notice, name='tf2-sigterm-notice',
                   daemon=True).start()
