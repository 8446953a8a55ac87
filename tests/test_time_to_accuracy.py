"""Time to accuracy (--stop_at_top_1_accuracy): the clock, the curve, the
record and the status of its own when the target is not reached; in both
engines on generated data."""

import dataclasses
import io
import json
import time
import types

import pytest

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.engine_tf2 import engine as tf2_engine
from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.run import evaluation
from tf_cnn_benchmarks.run import mlperf_log
from tf_cnn_benchmarks.run import report
from tf_cnn_benchmarks.run import step_loop
from tf_cnn_benchmarks.run import timing
from tf_cnn_benchmarks.run.run_result import RunResult
from tests.driver_helpers import run_quietly

STEP_SEC, EVAL_SEC = 0.02, 0.1


class _Watch:

  def phase(self, *unused, **unused_kw):
    import contextlib  # pylint: disable=g-import-not-at-top
    return contextlib.nullcontext()

  def check_stop(self):
    pass


class _Runner:
  """Steps that take STEP_SEC each, as a contracts.StepRunner."""

  def step(self, extra=None):
    del extra
    time.sleep(STEP_SEC)
    from tf_cnn_benchmarks import contracts  # pylint: disable=g-import-not-at-top
    return contracts.StepResult(STEP_SEC, {'loss': 1.0})


class _Extras(step_loop.NoExtras):
  """Evaluates after every 5th timed step, EVAL_SEC each; top-1 climbs by
  0.2 per evaluation."""

  def __init__(self, warmup):
    self.warmup = warmup
    self.count = 0

  def evaluation_due(self, step):
    return step % 5 == 0

  def evaluate(self, step):
    time.sleep(EVAL_SEC)
    self.count += 1
    return evaluation.Evaluation(step, self.warmup + step, 0.2 * self.count,
                                 0.9, 100)


def _loop(target, warmup=2, num_batches=30):
  params = flags.make_params(eval_during_training_every_n_steps=5,
                             stop_at_top_1_accuracy=target)
  # 10 steps an epoch: a global batch of 8 over 80 examples.
  rc = types.SimpleNamespace(params=params, num_warmup_batches=warmup,
                             num_batches=num_batches, global_batch_size=8,
                             examples_per_epoch=80, batch_size_per_worker=8,
                             training=True)
  out = io.StringIO()
  state = types.SimpleNamespace(
      rc=rc, params=params, reporter=report.Reporter(out), watch=_Watch(),
      times=timing.StepTimes(8), result=RunResult('ok', exit_codes.OK),
      milestones=mlperf_log.NO_LOG)
  loop = step_loop.StepLoop(state, _Runner(), _Extras(warmup))
  loop.warm_up()
  loop.run()
  return state, out


def test_time_to_target_counts_from_the_first_step_with_evaluations():
  state, out = _loop(target=0.6)
  result = state.result
  # Evaluations after timed steps 5, 10, 15: top-1 0.2, 0.4, 0.6 -> stop.
  assert [e['step'] for e in result.evaluations] == [5, 10, 15]
  assert result.stopped_at_step == 15 and state.times.num_steps == 15
  target = result.target
  assert target.steps == 17  # 2 warm-up + 15 timed steps
  assert target.epochs == pytest.approx(1.7)
  assert target.reached_top_1 == pytest.approx(0.6)
  # Training alone: 17 steps; the wall clock adds the 3 evaluations.
  assert 17 * STEP_SEC <= target.training_time_sec < 17 * STEP_SEC + 0.25
  assert target.time_sec >= target.training_time_sec + 3 * EVAL_SEC
  assert target.time_sec < target.training_time_sec + 3 * EVAL_SEC + 0.25
  # The curve: each evaluation's epoch and clocks, rising.
  curve = result.evaluations
  assert [e['epoch'] for e in curve] == pytest.approx([0.7, 1.2, 1.7])
  assert curve[0]['elapsed_sec'] < curve[1]['elapsed_sec'] < \
      curve[2]['elapsed_sec'] == target.time_sec
  assert curve[2]['training_sec'] == target.training_time_sec
  # The images/sec clock still leaves the evaluations out.
  assert state.times.timed_wall_time < 15 * STEP_SEC + 0.25
  driver.converged(state.params, result, state.reporter)
  assert result.status == 'ok' and result.exit_code == exit_codes.OK
  assert ('Time to target top-1 0.6000: %.1f s (training %.1f s), 1.70 '
          'epochs, 17 steps' % (target.time_sec, target.training_time_sec)
          in out.getvalue())


def test_a_run_short_of_its_target_has_a_status_and_exit_code_of_its_own():
  state, out = _loop(target=0.99, num_batches=12)
  result = state.result
  assert result.target is None and result.stopped_at_step is None
  driver.converged(state.params, result, state.reporter)
  assert result.status == 'target_not_reached'
  assert result.exit_code == exit_codes.TARGET_NOT_REACHED == 5
  assert ('Target top-1 0.9900 not reached: best 0.4000 (epoch 1.20, step '
          '12) in 2 evaluations over 1.20 epochs.' in out.getvalue())
  # Without a target, nothing changes.
  plain = RunResult('ok', exit_codes.OK)
  driver.converged(flags.make_params(), plain, state.reporter)
  assert plain.status == 'ok'


def test_the_header_says_the_target():
  params = flags.make_params(eval_during_training_every_n_epochs=0.5,
                             stop_at_top_1_accuracy=0.75)
  assert evaluation.target_line(params, 40.0) == (
      'top-1 0.7500 on validation (--stop_at_top_1_accuracy), evaluated '
      'every 0.5 epochs (20 steps), and after the last step')
  assert evaluation.target_line(flags.make_params(), 40.0) is None


def _learn(**overrides):
  # A small learning rate, so the climb from chance (1/3) takes a few
  # evaluations.
  settings = dict(model='lenet', batch_size=16, num_warmup_batches=0,
                  optimizer='sgd', init_learning_rate=0.002,
                  display_every=50, eval_batch_size=10, num_eval_batches=3,
                  num_batches=400, eval_during_training_every_n_steps=2)
  settings.update(overrides)
  return settings


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize('engine_name', ['graph', 'tf2'])
def test_a_run_reaches_its_target_and_records_the_time(
    learnable_shards, tmp_path, engine_name):
  settings = _learn(data_dir=learnable_shards, stop_at_top_1_accuracy=0.9,
                    result_dir=str(tmp_path), engine=engine_name)
  if engine_name == 'tf2':
    out = io.StringIO()
    params = flags.make_params(**dict(
        dict(device='cpu', result_dir=''), **settings))
    result = tf2_engine.run(params, reporter=report.Reporter(out))
    text = out.getvalue()
  else:
    result, text = run_quietly(**settings)
  assert result.status == 'ok', text
  assert 'Target:      top-1 0.9000 on validation' in text
  assert 'Time to target top-1 0.9000: ' in text
  with open(result.record_path) as f:
    record = json.load(f)
  summary = record['summary']
  assert summary['target_top_1_accuracy'] == 0.9
  assert summary['steps_to_target'] == result.target.steps == (
      result.stopped_at_step)
  assert summary['epochs_to_target'] == pytest.approx(
      summary['steps_to_target'] * 16 / 90.0)
  assert 0 < summary['training_time_to_target_sec'] < \
      summary['time_to_target_sec']
  curve = summary['evaluations']
  assert curve[-1]['top_1_accuracy'] >= 0.9 > curve[0]['top_1_accuracy']
  assert all(set(e) >= {'epoch', 'elapsed_sec', 'training_sec'}
             for e in curve)


@pytest.mark.timeout(300)
def test_target_not_reached_in_the_record_with_its_throughput(
    learnable_shards, tmp_path):
  result, text = run_quietly(**_learn(
      data_dir=learnable_shards, stop_at_top_1_accuracy=1.0, num_batches=6,
      eval_during_training_every_n_steps=3, result_dir=str(tmp_path),
      init_learning_rate=1e-9))  # it never learns
  assert result.status == 'target_not_reached', text
  assert result.exit_code == exit_codes.TARGET_NOT_REACHED
  assert 'Target top-1 1.0000 not reached: best ' in text
  with open(result.record_path) as f:
    record = json.load(f)
  assert record['status'] == 'target_not_reached'
  summary = record['summary']
  assert summary['time_to_target_sec'] is None
  assert summary['epochs_to_target'] is None
  assert len(summary['evaluations']) == 2
  # It trained and timed its steps: the throughput stands.
  assert summary['images_per_sec'] > 0


def test_evaluation_keeps_its_old_fields():
  """Records read by older tools: the new fields only add keys."""
  e = evaluation.Evaluation(3, 4, 0.5, 0.75, 10)
  assert dataclasses.asdict(e) == {
      'step': 3, 'global_step': 4, 'top_1_accuracy': 0.5,
      'top_5_accuracy': 0.75, 'num_examples': 10, 'epoch': None,
      'elapsed_sec': None, 'training_sec': None}
