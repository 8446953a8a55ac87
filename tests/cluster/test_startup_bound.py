"""--startup_timeout bounds a task's whole start-up, not each wait of it.

A task starts through several waits one after another (its peers' ports,
the session, the chief's initialisation, two barriers). Each used to get
the whole --startup_timeout, so a start-up could last several times it
before anything ended the task; now each gets what is left of one bound
(deadlines.StartupClock), and the start-up guard ends the task once the
whole start-up has lasted the bound plus its grace.
"""

import contextlib
import time

import pytest
import tensorflow as tf

from tests.cluster import helpers

from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster.task import start_barrier
from tf_cnn_benchmarks.cluster.task import start_protocol
from tf_cnn_benchmarks.cluster.watch import reachability
from tf_cnn_benchmarks.cluster.watch import startup_guard
from tf_cnn_benchmarks.variable_update import base

tf1 = tf.compat.v1


def _clock_started_ago(timeout, seconds_ago):
  """A StartupClock of ``timeout`` whose start-up began ``seconds_ago``."""
  clock = deadlines.StartupClock(timeout, clock=lambda: time.monotonic() -
                                 seconds_ago)
  clock.start()
  clock._clock = time.monotonic  # pylint: disable=protected-access
  return clock


def test_the_clock_gives_each_wait_what_is_left():
  clock = _clock_started_ago(10, 8)
  assert 1.5 < clock.left() <= 2.0
  assert _clock_started_ago(10, 12).left() == 0.0
  assert deadlines.StartupClock(10).elapsed() == 0.0  # not started yet


class _AllAnswer:
  """A prober whose every peer answers (none unreachable)."""

  def probe(self, now):
    del now
    return {}



def test_the_guard_ends_a_start_up_whose_waits_add_up_past_the_bound():
  """Each activity short, the whole start-up long: ended (it used to need
  one activity past the bound)."""
  bound = 10 + startup_guard.STARTUP_GRACE_SECONDS
  clock = _clock_started_ago(10, bound + 1)
  worker1 = helpers.cluster_role(index=1)
  guard = startup_guard.StartupGuard(worker1, clock, _AllAnswer(), {})
  ending = guard.check(time.monotonic(), 'waiting at the start barrier', 2.0)
  assert ending is not None and ending.status == 'stalled'
  assert 'start-up waited %d s' % (bound + 1) in ending.failure['message']
  fresh = _clock_started_ago(10, 5)
  assert startup_guard.StartupGuard(worker1, fresh, _AllAnswer(), {}).check(
      time.monotonic(), 'waiting at the start barrier', 2.0) is None


@pytest.mark.timeout(60)
def test_a_barrier_wait_takes_only_what_start_up_has_left():
  """A real barrier that nobody initialises (the chief never comes): a
  worker whose start-up has spent 8 of its 10 s gives up after ~2 s."""
  graph = tf.Graph()
  with graph.as_default():
    needs = base.ClusterStart(1, barrier_device='/cpu:0')
    protocol = start_protocol.build(helpers.cluster_role(index=1), needs,
                                    _clock_started_ago(10, 8))
    assert isinstance(protocol.barrier, start_barrier.StartBarrier)
  with tf1.Session(graph=graph) as sess:
    started = time.monotonic()
    with pytest.raises(reachability.ClusterWaitTimeout, match='worker0'):
      # The non-chief's first wait: for the chief to create the barrier.
      protocol.run(sess, None, None, None,
                   lambda text: contextlib.nullcontext())
    assert time.monotonic() - started < 5
