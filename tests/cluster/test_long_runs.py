"""A long cluster run holds what it took in its first steps, no more.

A leak per step is invisible in the few steps most cluster tests run: here
a real cluster trains for hundreds of steps while the test watches a
worker's threads in /proc.
"""

import collections
import os
import signal
import types

import pytest

from tests.cluster import helpers
from tf_cnn_benchmarks.cluster import deadlines

pytestmark = pytest.mark.cluster

# Steps before the first count: the thread pools have grown to their size.
_SETTLED_STEP = 50
# Steps the count must then stay flat over: a leak of one thread per
# variable per step would add ~3000 here (the trivial model has 6).
_WATCHED_STEPS = 500
# Threads that may come and go without a leak (gRPC pollers, a watchdog
# check's thread, ...).
_THREAD_SLACK = 40


def _threads(pid):
  """(count, the most common names) of process ``pid``'s threads."""
  names = collections.Counter()
  for tid in os.listdir('/proc/%d/task' % pid):
    try:
      with open('/proc/%d/task/%s/comm' % (pid, tid)) as f:
        names[f.read().strip()] += 1
    except OSError:
      pass  # The thread ended while we looked.
  return sum(names.values()), names.most_common(4)


# Bounds that give every step a deadline (deadlines.step_deadline_seconds),
# as the defaults do: what a collective's own timeout would be.
_BOUNDS = dict(stall_timeout=15, stall_shutdown_timeout=60)


def _assert_a_flat_thread_count(tmp_path, **overrides):
  """Launches a 2-worker cluster (``overrides``: its flags) with _BOUNDS;
  each worker's thread count may rise by _THREAD_SLACK at most from step
  _SETTLED_STEP over _WATCHED_STEPS steps."""
  assert deadlines.step_deadline_seconds(types.SimpleNamespace(**_BOUNDS))
  process, log = helpers.launch_in_background(
      tmp_path, ps=0, variable_update='collective_all_reduce',
      display_every=_SETTLED_STEP, **dict(_BOUNDS, **overrides))
  pids = {}
  try:
    pids = helpers.wait_until_step(process, log, 'worker0', _SETTLED_STEP)
    settled = {label: _threads(pids[label]) for label in pids}
    last = _SETTLED_STEP + _WATCHED_STEPS
    helpers.wait_until_step(process, log, 'worker0', last)
    after = {label: _threads(pids[label]) for label in pids}
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
  finally:
    helpers.kill([process])
  output = helpers.read(log)
  for label in ('worker0', 'worker1'):
    (before, _), (now, names) = settled[label], after[label]
    assert now - before <= _THREAD_SLACK, (
        '%s: %d threads at step %d, %d at step %d (most: %s)' % (
            label, before, _SETTLED_STEP, now, last, names), output[-3000:])
  helpers.assert_no_orphans(pids)


@pytest.mark.timeout(120)
def test_collective_run_with_a_step_deadline_keeps_a_flat_thread_count(
    tmp_path):
  """collective_all_reduce with the step deadline on: a collective op with
  a timeout makes TensorFlow start a thread per run that sleeps for the
  whole timeout, so a step deadline carried by the all-reduces left each
  worker ~6 more threads per step (thousands within minutes, then the
  process and the host out of threads). The count stays flat, and the
  deadline is still on (the step's session.run carries it)."""
  _assert_a_flat_thread_count(tmp_path)


@pytest.mark.timeout(120)
def test_tf2_collective_run_with_a_step_deadline_keeps_a_flat_thread_count(
    tmp_path):
  """--engine=tf2 (MultiWorkerMirroredStrategy) with the step deadline on:
  the same leak when the strategy's collectives carried the deadline as
  their timeout (CommunicationOptions.timeout_seconds): ~2 threads per
  step, 2143 at step 1000. The count stays flat, and the deadline is still
  on: one thread per task aborts the collectives of a step past it
  (cluster/task/tf2_step_deadline.py; test_tf2_step_deadline.py)."""
  _assert_a_flat_thread_count(tmp_path, engine='tf2')
