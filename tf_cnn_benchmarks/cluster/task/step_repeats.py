"""A step a cluster task runs again after TensorFlow refused it as a copy.

Every RunGraph request a master sends a task carries a random 64-bit id,
and the task refuses an id it has already seen (it remembers its last
100,000, RecvTensor's among them): AbortedError "The same RunGraph (Worker)
request was received twice". Two things bring that about:

- TensorFlow repeats an id by itself. It draws ids from a per-thread
  generator (tsl::random::ThreadLocalNew64) seeded with only 32 bits, and
  the master runs every step on a new thread, so each step's ids are fixed
  by a fresh 32-bit seed. Over n of one worker's steps a task meets a
  repeat with odds of about n^2 / 2^33 (1 in 2,000 over 2,000 steps, 1 in
  86 over 10,000) while it remembers them all; a ps that takes k workers'
  steps, up to k^2 times that. Nothing else is wrong. CI met one on
  loopback (at a3cc3ec: worker1, step ~1300 of a 1800-step
  distributed_replicated run), and the id it refused is the second draw of
  seed 1671799294 (studies/request_id_seed.c searched every seed).
- A network interruption lost a call's answer and TensorFlow's gRPC client
  sent it again, which it does only when GRPC_MAX_RETRIES is set above its
  default, 0.

A repeated id is refused before anything runs on the refusing task (a
refused resend's first send did run there). An asynchronous worker runs
that step again, with new ids. Its updates do not wait for anyone else's,
so if a partition elsewhere had already applied its gradients, the repeat
is one more update, as asynchronous SGD allows. A step in lockstep cannot
be repeated: the other workers may have counted this worker's part of it
(a sync token taken, a gradient accumulated). There the error ends the
run, and ``refused_failure`` says what happened.
"""

import os

from tf_cnn_benchmarks import failures

# TensorFlow's words (distributed_runtime/recent_request_ids.cc) when a
# task refuses a request id it has already seen.
REFUSED_COPY_WORDS = 'request was received twice'
# Refused copies of one step after which it is not tried again: a repeat
# draws a fresh seed, refused again by chance at most once in ~2^32 / (the
# ids the task remembers), so three in a row are not chance (with resends
# on, a network that is not coming back by itself).
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
      say('TensorFlow refused this step as a copy of an earlier request '
          '(%s); running it again, %d of at most %d (asynchronous '
          'training).' % (refused[-1], len(refused), MAX_REPEATS))


def resends_on():
  """Whether TensorFlow's gRPC client sends a failed call again
  (GRPC_MAX_RETRIES above 0; it is 0 unless set). This task's environment
  stands for its peers': the launcher gives every task the same one. A
  value that is not a number stops TensorFlow itself (TF_CHECK_OK) before
  any step, so reading it as 0 here blames nothing wrongly."""
  try:
    return int(os.environ.get('GRPC_MAX_RETRIES') or 0) > 0
  except ValueError:
    return False


def refused_failure(task, exc, lockstep):
  """The failure of a task that met a refused copy it could not get past
  (and no peer failed first): in a step in lockstep, which cannot be run
  again; in a step that was refused every time it was (MAX_REPEATS); or in
  a call between steps (a board update, a save), which is not repeated.
  What it blames follows resends_on(): without resends only TensorFlow's
  own repeated id can have brought it about."""
  repeats = getattr(exc, 'repeats', None)
  what = '%s\'s step' % task
  if repeats is None:
    what, why = ('a call %s made between steps' % task,
                 'only a step is run again')
  elif lockstep:
    why = 'a synchronous step cannot be run again'
  else:
    why = 'it was run again %d times and refused each time' % repeats
  repeated_id = (
      'TensorFlow gave two requests the same random id (it seeds each '
      'step\'s ids with only 32 bits: odds of about n^2/2^33 over n steps, '
      '1 in 2,000 over 2,000)')
  if resends_on():
    cause = ('either a network interruption lost an answer and the resend '
             '(GRPC_MAX_RETRIES) was refused, or ' + repeated_id)
    hint = ('If the network was steady, this was TensorFlow\'s repeated '
            'id; else check the link between %s and the other tasks (a '
            'flapping interface, a restarted switch or firewall). Then run '
            'again (from the last checkpoint, with --train_dir).' % task)
  else:
    cause = repeated_id + '; no resend is turned on (GRPC_MAX_RETRIES)'
    hint = ('Nothing is wrong with the cluster or the network: run again '
            '(from the last checkpoint, with --train_dir). A long '
            'synchronous run is likelier to meet this than a short one.')
  return failures.failure(
      type(exc).__name__,
      'TensorFlow refused %s as a copy of an earlier request (%s): %s; %s'
      % (what, failures.first_line(exc), cause, why),
      task, hint)
