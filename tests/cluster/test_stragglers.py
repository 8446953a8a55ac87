"""The chief names a straggler (cluster/watch/stragglers.py): a worker alive but
slower than the others, slowed for real by the 'slow' test fault (between
steps) and the 'slow_compute' one (inside the step, before its gradients
are handed over).

The judge first, on board readings made up here; then real clusters.
"""

import contextlib
import json
import types
import warnings

import pytest
import tensorflow as tf

from tests.cluster import helpers
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.cluster.task import progress_board
from tf_cnn_benchmarks.cluster.task import runtime as runtime_lib
from tf_cnn_benchmarks.cluster.task import step_repeats
from tf_cnn_benchmarks.cluster.watch import stragglers
from tf_cnn_benchmarks.config import run_mode
from tf_cnn_benchmarks.engine_graph import checkpoints

tf1 = tf.compat.v1

LABELS = ['worker0', 'worker1', 'worker2']


def _watch(lockstep=True):
  said = []
  watch = stragglers.StragglerWatch(
      LABELS, lockstep, lambda line, found: said.append((line, found)))
  return watch, said


def _snapshot(started, completed, compute_seconds=(), between_seconds=()):
  return progress_board.Snapshot(tuple(started), tuple(completed),
                                 (None,) * len(started),
                                 tuple(compute_seconds),
                                 tuple(between_seconds))


def _feed_lockstep(watch, readings, worker2_between, started_lags=False):
  """Sync readings a second apart: everyone advances by 1; worker2 spends
  ``worker2_between`` of the wall time between steps, the others 1%.
  ``started_lags``: every reading finds worker2 not yet in the newest step
  (as a chief's late readings do under load)."""
  for n in range(1, readings + 1):
    started = [n + 1, n + 1, n if started_lags else n + 1]
    between = [0.01 * n, 0.01 * n, worker2_between * n]
    watch.take(_snapshot(started, [n, n, n], between_seconds=between),
               float(n))


def test_sync_worker_between_steps_three_quarters_is_named_once():
  watch, said = _watch()
  _feed_lockstep(watch, 100, 0.75)  # 1 / (1 - 0.74) = 3.85x
  lines = [line for line, _ in said if line]
  assert len(lines) == 1, said
  assert lines[0].startswith('Straggler: worker2 is 3.8x slower')
  # The record's entry follows the straggler to the last reading.
  found = said[-1][1]
  assert [s['task'] for s in found] == ['worker2']
  # Its 0.75 s of each 1 s step is 0.74 s more than the others' 0.01 s:
  # 1 / (1 - 0.74).
  assert found[0]['slowdown'] == pytest.approx(3.85, abs=0.01)
  assert found[0]['steps'][1] == 100


def test_the_lag_is_the_time_measured_not_how_often_readings_find_it():
  """A 3x straggler spends 2/3 of the time between steps; readings that
  happen to find it there every time (CI put a 3x lag at 19.3x that way)
  change nothing."""
  watch, said = _watch()
  _feed_lockstep(watch, 100, 2 / 3, started_lags=True)
  assert watch.reported()[0]['slowdown'] == pytest.approx(2.91, abs=0.01)


def test_the_others_own_gaps_are_not_counted_as_the_stragglers():
  """The step waits only for the straggler's gap beyond the others':
  0.85 s of a 1 s step against their 0.3 s is 2.22x (the step would take
  0.45 s without it), not the 4.67x of comparing 1 / (1 - share)."""
  watch, _ = _watch()
  for n in range(1, 101):
    watch.take(_snapshot([n + 1] * 3, [n] * 3,
                         between_seconds=[0.3 * n, 0.3 * n, 0.85 * n]),
               float(n))
  assert watch.reported()[0]['task'] == 'worker2'
  assert watch.reported()[0]['slowdown'] == pytest.approx(2.22, abs=0.01)


def test_sync_small_lags_name_nobody():
  watch, said = _watch()
  _feed_lockstep(watch, 100, 0.25)  # 1 / (1 - 0.24): 1.32x, under 2x
  assert not said and not watch.reported()


def _feed_compute(watch, readings, seconds_per_step):
  """Sync readings where everyone enters each step together (nobody lags),
  each worker's steps computing ``seconds_per_step[i]`` before it hands
  its gradients over."""
  for n in range(1, readings + 1):
    compute = [n * s for s in seconds_per_step]
    watch.take(_snapshot([n + 1] * 3, [n] * 3, compute), float(n))


def test_sync_worker_computing_slower_is_named_with_the_compute_ratio():
  watch, said = _watch()
  _feed_compute(watch, 100, [0.010, 0.012, 0.033])
  assert [s['task'] for s in watch.reported()] == ['worker2']
  # 0.033 s over the median of the others' 0.011 s.
  assert watch.reported()[0]['slowdown'] == pytest.approx(3.0, rel=0.05)
  assert len([line for line, _ in said if line]) == 1


def test_compute_times_within_the_threshold_name_nobody():
  """Nor does a board whose steps time nothing (collective modes)."""
  for seconds_per_step in ([0.010, 0.012, 0.019], [0.0, 0.0, 0.0]):
    watch, said = _watch()
    _feed_compute(watch, 100, seconds_per_step)
    assert not said and not watch.reported()


def test_a_stalled_cluster_is_not_a_straggler():
  """Readings without progress are the stall detector's, not counted."""
  watch, said = _watch()
  for n in range(100):
    watch.take(_snapshot([5, 5, 4], [4, 4, 4]), float(n))
  assert not said


def test_async_slow_rate_is_named_with_the_rate_ratio():
  watch, said = _watch(lockstep=False)
  for n in range(1, 60):
    watch.take(_snapshot([3 * n, 3 * n, n], [3 * n, 3 * n, n]), float(n))
  assert [s['task'] for s in watch.reported()] == ['worker2']
  assert watch.reported()[0]['slowdown'] == pytest.approx(3.0, rel=0.05)
  assert len([line for line, _ in said if line]) == 1


# -- what a worker puts on the board: its own gaps between steps

class _Board:
  """The board as _counted_step sees it: the gaps published with each
  step's start (collective and tf2 steps), or the feeds of a step that
  counts itself."""

  def __init__(self):
    self.started = []

  def between_feed(self, seconds):
    return {'between': seconds}

  def publish_start(self, sess, timeout_ms, between=0.0):
    del sess, timeout_ms
    self.started.append(between)

  def publish_completion(self, sess, timeout_ms):
    del sess, timeout_ms

  def settle(self, sess, timeout_ms):
    del sess, timeout_ms


def _runtime_on_a_clock(monkeypatch, board_in_step, lockstep=True):
  """A worker's runtime with a fake board and a clock the test moves."""
  clock = types.SimpleNamespace(now=100.0)
  monkeypatch.setattr(runtime_lib, 'time', types.SimpleNamespace(
      monotonic=lambda: clock.now))
  role = types.SimpleNamespace(task_name='worker1', lockstep=lockstep)
  runtime = runtime_lib.ClusterRuntime(role, types.SimpleNamespace())
  runtime.board = _Board()
  runtime._board_in_step = board_in_step  # pylint: disable=protected-access
  runtime.checks = types.SimpleNamespace(
      doing=lambda text, step=False: contextlib.nullcontext(),
      rename_activity=lambda text: None, training_ended=lambda: None)
  runtime.run_watch = types.SimpleNamespace(say=lambda line: None)
  return runtime, clock


def _step(runtime, clock, seconds, feeds=None):
  def run(feed):
    if feeds is not None:
      feeds.append(feed)
    clock.now += seconds
  return runtime._counted_step(None, run)  # pylint: disable=protected-access


def test_a_worker_publishes_its_gaps_and_leaves_a_checkpoint_save_out(
    monkeypatch):
  """Collective and tf2 steps publish their start with the gap since the
  previous step returned; a save the task names (runtime.doing) between
  them is left out: in a synchronous cluster the others wait for the
  chief's save, which would otherwise make it a straggler."""
  runtime, clock = _runtime_on_a_clock(monkeypatch, board_in_step=False)
  _step(runtime, clock, 1.0)
  clock.now += 0.25  # the worker's own loop
  _step(runtime, clock, 1.0)
  clock.now += 0.5
  with runtime.doing('saving a checkpoint'):
    clock.now += 30.0
  clock.now += 0.125
  _step(runtime, clock, 1.0)
  clock.now += 0.25  # the save is left out of one gap only
  _step(runtime, clock, 1.0)
  assert runtime.board.started == [0.0, 0.25, 0.625, 0.25]


def test_the_chiefs_checkpoint_save_runs_as_named_work(tmp_path):
  """The save is left out of the chief's gap only because Checkpointer
  runs it inside runtime.doing (the test above): a real save of a real
  graph, by a runtime that notes what runs inside its named work."""
  graph = tf.Graph()
  with graph.as_default():
    global_step = tf1.train.get_or_create_global_step()
    advance = global_step.assign_add(1)
    saver = tf1.train.Saver()
  inside = []

  class Runtime:
    is_chief = True
    named = None

    @contextlib.contextmanager
    def doing(self, text):
      self.named = text
      try:
        yield
      finally:
        self.named = None

  runtime = Runtime()

  class Saver:
    def save(self, *args, **kwargs):
      inside.append(runtime.named)
      return saver.save(*args, **kwargs)

  rc = types.SimpleNamespace(
      params=types.SimpleNamespace(train_dir=str(tmp_path),
                                   save_model_steps=None,
                                   save_model_secs=None),
      mode=run_mode.RunMode.TRAINING)
  built = types.SimpleNamespace(global_step=global_step, saver=Saver())
  saving = checkpoints.Checkpointer(rc, built, runtime)
  with tf1.Session(graph=graph) as sess:
    sess.run(tf1.global_variables_initializer())
    sess.run(advance)
    saving.save(sess)
  assert inside == ['saving a checkpoint to %s' % tmp_path]
  assert tf1.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-1')


def test_a_step_that_counts_itself_feeds_its_gap_once(monkeypatch):
  """Graph steps that count themselves feed the gap into their own run; an
  attempt run again after a refused copy feeds 0 (step_repeats.py), or the
  gap would be counted twice."""
  runtime, clock = _runtime_on_a_clock(monkeypatch, board_in_step=True,
                                       lockstep=False)
  feeds = []
  _step(runtime, clock, 1.0, feeds)
  clock.now += 2.0
  refusals = [tf.errors.AbortedError(
      None, None, step_repeats.REFUSED_COPY_WORDS)]

  def run(feed):
    feeds.append(feed)
    if refusals:
      raise refusals.pop()
  runtime._counted_step(None, run)  # pylint: disable=protected-access
  assert feeds == [{'between': 0.0}, {'between': 2.0}, {'between': 0.0}]


# -- real clusters: 1 ps + 3 synchronous parameter_server workers

def _run_cluster(tmp_path, num_batches, fault=None, **overrides):
  """Runs the cluster long enough for the straggler judge.

  The chief judges about one reading a second over a window of
  stragglers.WINDOW readings: a shorter run names nobody, and a test of it
  could not fail. Step counts in the tests are set for ~28-36 s of timed
  steps on this 2-core machine (measured 28 Nov 2026: 10 ms a step
  unslowed, 17-20 ms slowed in compute, 20 ms slowed by the step), a margin
  over the judge's _LONG_ENOUGH that a CI run under load keeps. A faster
  machine finishes them sooner, so a run that trained too briefly is run
  again, once, with its step count scaled to the time it needs (such a
  rerun doubles the test's time: 2400 unslowed steps trained 23.5 s, and the
  test took 72 s). These are the longest synchronous clusters of the suite,
  so the likeliest to meet TensorFlow's repeated request ids (odds of about
  n^2/2^33 over n steps: step_repeats.py): a run a refused copy ended
  (helpers.ended_by_a_refused_copy) is run again too, once, with a warning
  that names it.
  """
  env = {helpers.FAULT_ENV: fault} if fault else None
  too_short = refused = 0
  while True:
    run_dir = tmp_path / ('run%d' % (too_short + refused))
    run_dir.mkdir()
    code, output = helpers.launch_and_wait(
        run_dir, 400, workers=3, ps=1, env=env, num_batches=num_batches,
        display_every=100, num_warmup_batches=1, **overrides)
    recs = helpers.records(str(run_dir))
    if (code != exit_codes.OK and not refused and
        helpers.ended_by_a_refused_copy(recs)):
      refused += 1
      warnings.warn('TensorFlow refused a step of the cluster in %s as a '
                    'copy (a repeated request id); run again once' % run_dir)
      continue
    assert code == exit_codes.OK, helpers.end_first(output)
    trained = recs['worker0']['phases']['timed_loop']
    if trained >= _LONG_ENOUGH:
      return output, recs
    too_short += 1
    if too_short == 2:
      raise AssertionError('trained %.1f s twice: too short for the '
                           'straggler judge (%d s)' % (trained, _LONG_ENOUGH))
    num_batches = int(num_batches * (_LONG_ENOUGH + 10) / max(trained, 1.0))


_LONG_ENOUGH = stragglers.WINDOW + 5


def _fake_launches(monkeypatch, outcomes):
  """helpers.launch_and_wait replaced by one that writes worker0's record
  for each of ``outcomes`` in turn: 'refused' (a refused copy ended it), 'ok'
  (trained long enough) or 'short'; returns the run folders launched."""
  launched = []

  def launch_and_wait(run_dir, timeout, **unused_overrides):
    outcome = outcomes[len(launched)]
    launched.append(run_dir.name)
    failure = outcome == 'refused' and {
        'type': 'AbortedError', 'task': 'worker0',
        'message': step_repeats.REFUSED_COPY_WORDS}
    (run_dir / 'worker0.json').write_text(json.dumps({
        'config': {'job_name': 'worker', 'task_index': 0},
        'failure': failure or None,
        'phases': {'timed_loop': 5.0 if outcome == 'short' else 99.0}}))
    return (exit_codes.RUN_FAILED if failure else exit_codes.OK), outcome

  monkeypatch.setattr(helpers, 'launch_and_wait', launch_and_wait)
  return launched


def test_a_cluster_a_refused_copy_ended_is_run_again_once(
    tmp_path, monkeypatch):
  launched = _fake_launches(monkeypatch, ['refused', 'short', 'ok'])
  with pytest.warns(UserWarning, match='refused a step of the cluster'):
    output, _ = _run_cluster(tmp_path, 100)
  assert output == 'ok' and launched == ['run0', 'run1', 'run2']
  # A second refused copy is a failure, not another run.
  launched = _fake_launches(monkeypatch, ['refused', 'refused', 'ok'])
  (tmp_path / 'again').mkdir()
  with pytest.warns(UserWarning), pytest.raises(AssertionError,
                                                match='its last'):
    _run_cluster(tmp_path / 'again', 100)
  assert launched == ['run0', 'run1']


def _assert_only_worker2_named(output, recs):
  named = [l for l in helpers.task_lines(output, 'worker0')
           if l.startswith('Straggler: ')]
  assert named and named[0].startswith('Straggler: worker2 is '), output
  found = recs['worker0']['stragglers']
  assert [s['task'] for s in found] == ['worker2'], found
  # Followed to the end of training, not just where it was first named.
  first, last = found[0]['steps']
  assert last > first, found
  # Slowed 3x: measured 3.06x (2.95-3.4x, and 3.06x with two busy loops
  # beside the cluster, by the share-based estimate before 29 Nov).
  # (Counting the readings that found worker2 between steps put it at
  # 8.75x and 19.3x in CI: this bound is what caught it.)
  assert 2.0 <= found[0]['slowdown'] <= 5.0, found
  # Only the chief judges; nothing is a failure.
  assert not recs['worker1']['stragglers']
  assert all(r['status'] == 'ok' for r in recs.values())


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_chief_names_a_worker_slowed_three_times(tmp_path):
  # ~25 ms a step at the slowed pace.
  _assert_only_worker2_named(
      *_run_cluster(tmp_path, 1400, 'slow:worker2:step1:x3'))


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize('mode, consistency', [
    ('parameter_server', 'strong'), ('distributed_replicated', 'strong'),
    ('distributed_replicated', 'relaxed')])
def test_chief_names_a_worker_computing_three_times_slower(
    tmp_path, mode, consistency):
  """The slowness is inside worker2's session.run: it enters every step
  with the others, who push their gradients and wait for its. (~20 ms a
  step on loopback.) Relaxed pushes the previous step's mean, but only
  once this step's is stored (all_reduce.Deferred), so the hand-over still
  comes after the compute (measured 3.4x)."""
  _assert_only_worker2_named(*_run_cluster(
      tmp_path, 1800, 'slow_compute:worker2:step1:x3', variable_update=mode,
      variable_consistency=consistency))


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_no_straggler_is_named_when_nobody_is_slow(tmp_path):
  # ~10 ms a step: as many readings as the slowed runs.
  output, recs = _run_cluster(tmp_path, 3400)
  assert 'Straggler' not in output, output
  assert recs['worker0']['stragglers'] == []
