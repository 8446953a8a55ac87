"""A step a cluster task runs again after a network interruption.

When a call between tasks fails as UNAVAILABLE, TensorFlow's gRPC client
sends it again with the same request id. If the first send did arrive and
only its answer was lost (a link that went down and came back), the peer
refuses the copy: AbortedError "The same RunGraph (Worker) request was
received twice". The peer is alive and the link is back, so only the step
failed.

An asynchronous worker runs that step again. Its updates do not wait for
anyone else's, so if the first attempt had already applied its gradients,
the repeat is one more update, as asynchronous SGD allows. A step in
lockstep cannot be repeated: the other workers have already counted this
worker's part of it (a sync token taken, a gradient accumulated). There the
error ends the run, and ``refused_failure`` says what happened.
"""

from tf_cnn_benchmarks import failures

# TensorFlow's words (distributed_runtime/recent_request_ids.cc) when a
# task refuses a request id it has already seen.
REFUSED_COPY_WORDS = 'request was received twice'
# Refused copies of one step after which it is not tried again: the
# network is not coming back by itself.
MAX_REPEATS = 3


def is_refused_copy(exc):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return (isinstance(exc, tf.errors.AbortedError) and
          REFUSED_COPY_WORDS in str(exc))


def run(attempt, may_repeat, say):
  """``attempt()``, run again after each refused copy when ``may_repeat``
  (at most MAX_REPEATS times); ``say(line)`` prints each repeat.

  Returns (attempt's values, the first line of each refused attempt).
  """
  refused = []
  while True:
    try:
      return attempt(), refused
    except Exception as e:  # pylint: disable=broad-except
      refused_copy = is_refused_copy(e)
      if not (may_repeat and refused_copy) or len(refused) >= MAX_REPEATS:
        if refused_copy:
          # How many times this step was run again, for refused_failure's
          # words (a refused copy outside a step has no such attribute).
          e.repeats = len(refused)
        raise
      refused.append(failures.first_line(e))
      say('A network interruption cost this step its answer (%s); running '
           'it again, %d of at most %d (asynchronous training).' % (
               refused[-1], len(refused), MAX_REPEATS))


def refused_failure(task, exc, lockstep):
  """The failure of a task that met a refused copy it could not get past
  (and no peer failed first): in a step in lockstep, which cannot be run
  again; in a step that was refused every time it was (MAX_REPEATS); or in
  a call between steps (a board update, a save), which is not repeated."""
  repeats = getattr(exc, 'repeats', None)
  what = '%s\'s step' % task
  if repeats is None:
    what, why = ('a call %s made between steps' % task,
                 'only a step is run again')
  elif lockstep:
    why = 'a synchronous step cannot be run again'
  else:
    why = 'it was run again %d times and refused each time' % repeats
  return failures.failure(
      type(exc).__name__,
      'a network interruption cost %s its answer, and TensorFlow\'s resend '
      'was refused as a copy (%s); %s' % (what, failures.first_line(exc),
                                          why),
      task,
      'The link between %s and another task of the cluster went down and '
      'came back. Check the network (a flapping interface, a restarted '
      'switch or firewall), then run again (from the last checkpoint, with '
      '--train_dir).' % task)
