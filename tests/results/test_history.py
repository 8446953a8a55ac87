"""`tf_cnn_benchmarks history`: steps found where they were planted, none in
noise, versions in PEP 440 order, bad input as one paragraph."""

import os
import subprocess

import numpy as np
import pytest

from results import comparison as comparison_lib
from results import store
from results.history import analysis
from results.history import change_points
from results.history import command
from results.history import ordering
from tests import tools
from tests.results.history_factory import sha, write_history
from tests.results.record_factory import make_record, write_record
from tf_cnn_benchmarks import cli
from tf_cnn_benchmarks.measure import environment


def run_history(capsys, folder, *extra):
  code = command.main(['history', '--result_dir', str(folder)] + list(extra))
  captured = capsys.readouterr()
  return code, captured.out, captured.err


def test_planted_ten_percent_step_is_found_at_its_commit_with_its_size(
    tmp_path, capsys):
  rng = np.random.default_rng(11)
  # 12 commits, 3 runs each; commit 7 makes it 10% slower.
  write_history(tmp_path, [1000.0] * 7 + [900.0] * 5, rng)
  history = analysis.analyse(store.load_runs(tmp_path), 'commit')
  (one,) = history.histories
  (step,) = one.steps
  assert step.index == 7 * 3
  assert step.kind == change_points.STEP_DOWN
  result = step.result
  assert -11.5 < result.change_pct < -8.5
  # A 95% interval around the planted -10%, far from 0.
  assert -14 < result.change_pct_low < result.change_pct_high < -7
  code, out, _ = run_history(capsys, tmp_path, '--order', 'commit')
  assert code == command.EXIT_STEP_DOWN
  assert 'commit %s..%s' % (sha(6)[:7], sha(7)[:7]) in out
  assert '1 step(s) down, 0 up' in out
  # By time the same step is found between the same two runs.
  code, out, _ = run_history(capsys, tmp_path, '--order', 'time')
  assert code == command.EXIT_STEP_DOWN
  assert ('runs of 2025-03-01 20:00 and 2025-03-01 21:00' in out), out


def test_a_step_up_and_a_step_down_both_found(tmp_path, capsys):
  rng = np.random.default_rng(12)
  write_history(tmp_path, [1000.0] * 5 + [1100.0] * 5 + [1000.0] * 5, rng)
  history = analysis.analyse(store.load_runs(tmp_path), 'commit')
  steps = history.histories[0].steps
  assert [(s.index, s.kind) for s in steps] == [
      (15, change_points.STEP_UP), (30, change_points.STEP_DOWN)]


def test_flat_noisy_histories_find_nothing(tmp_path, capsys):
  """20 histories of 40 runs, 2% noise, no step: not one step reported."""
  found = []
  for seed in range(20):
    rng = np.random.default_rng(100 + seed)
    values = 1000 * (1 + rng.normal(0, 0.02, 40))
    found += change_points.find_steps(values, list(range(40)))
  assert found == []
  write_history(tmp_path, [1000.0] * 40, np.random.default_rng(7),
                runs_per_point=1, noise=0.02)
  code, out, _ = run_history(capsys, tmp_path)
  assert code == command.EXIT_NO_STEP_DOWN
  assert 'trivial: 40 run(s)' in out and 'no step' in out


def test_version_order_sorts_2_9_before_2_10(tmp_path, capsys):
  rng = np.random.default_rng(13)
  versions = ['2.9.3', '2.10.1', '2.11.0', '2.12.0']
  # 2.9 is fast, every later version 10% slower. As text, 2.9.3 would sort
  # last and the step would show up as a speed-up from 2.12.0 to 2.9.3.
  write_history(tmp_path, [1000.0, 900.0, 900.0, 900.0], rng,
                runs_per_point=4, versions=versions, commits=False)
  runs = [run for one in ordering.build_series(
      comparison_lib.usable_runs(store.load_runs(tmp_path)),
      'tf_version')[0] for run in one.runs]
  assert [ordering.version_of(run) for run in runs[::4]] == versions
  code, out, _ = run_history(capsys, tmp_path, '--order', 'tf_version')
  assert code == command.EXIT_STEP_DOWN
  assert 'TF 2.9.3 .. 2.12.0' in out
  assert 'down' in out and 'TF 2.9.3 -> 2.10.1' in out, out


def test_a_step_never_splits_the_runs_of_one_version():
  rng = np.random.default_rng(14)
  # The slowdown starts in the middle of version b's runs (drift, not the
  # version): the step moves to an edge of b's block.
  values = np.array([1000] * 6 + [900] * 8) * (1 + rng.normal(0, 0.01, 14))
  blocks = ['a'] * 4 + ['b'] * 4 + ['c'] * 6
  (step,) = change_points.find_steps(values, blocks)
  assert step.index in (4, 8)
  assert blocks[step.index - 1] != blocks[step.index]


def test_steps_under_the_minimum_are_not_reported(tmp_path, capsys):
  rng = np.random.default_rng(15)
  write_history(tmp_path, [1000.0] * 6 + [985.0] * 6, rng, noise=0.002)
  code, out, _ = run_history(capsys, tmp_path, '--order', 'commit')
  assert code == 0 and 'no step' in out
  # The same 1.5% step is found once the minimum is lowered below it.
  code, out, _ = run_history(capsys, tmp_path, '--order', 'commit',
                             '--min_step', '1')
  assert code == command.EXIT_STEP_DOWN, out


@pytest.mark.parametrize('arguments, words', [
    (['--result_dir', '{missing}'], 'does not exist'),
    (['--result_dir', '{empty}'], 'no run records'),
    (['--result_dir', '{failed}'], 'no history'),
    (['--result_dir', '{no_commits}', '--order', 'commit'],
     '`history --order time` or `--order tf_version`'),
    (['--result_dir', '{no_commits}', '--alpha', '2'], '--alpha'),
    (['--result_dir', '{no_commits}', '--min_step', '-1'], '--min_step'),
    ([], 'no result folder given'),
])
def test_bad_input_gets_one_paragraph_and_exit_2(tmp_path, capsys, arguments,
                                                 words):
  folders = {name: tmp_path / name for name in
             ('missing', 'empty', 'failed', 'no_commits')}
  for name in ('empty', 'failed', 'no_commits'):
    folders[name].mkdir()
  write_record(folders['failed'], make_record(status='failed'))
  write_history(folders['no_commits'], [1000.0] * 3, np.random.default_rng(1),
                commits=False)
  code = command.main(['history'] + [a.format(**folders) for a in arguments])
  err = capsys.readouterr().err
  assert code == 2
  assert err.startswith('error: ') and words in ' '.join(err.split()), err
  assert '\n\n' not in err.strip() and 'Traceback' not in err


def test_unknown_order_is_refused_by_the_cli(tmp_path, capsys):
  assert cli.main(['tf_cnn_benchmarks', 'history', '--result_dir',
                   str(tmp_path), '--order', 'alphabetical']) == 2
  assert 'invalid choice' in capsys.readouterr().err


def test_records_name_the_checkouts_commit():
  """What --order commit reads is what a run records (no TensorFlow)."""
  described = environment.describe(with_tensorflow=False)
  head = subprocess.run(['git', 'rev-parse', 'HEAD'], capture_output=True,
                        text=True, check=False,
                        cwd=os.path.dirname(os.path.dirname(cli.__file__)))
  if head.returncode != 0:
    tools.unavailable('not a git checkout (or no `git`): runs record no '
                      'commit here', 'run the tests in a git clone, with git '
                      'installed')
  assert described['harness_commit'] == head.stdout.strip()
  assert ordering.timestamp(described['harness_commit_time']) is not None


def test_steps_of_many_configurations_are_judged_as_one_family(tmp_path,
                                                               capsys):
  """Four configurations, each 10% slower after 4 runs: alone, 4 runs
  either side give p = 2/70 = 0.029 and a step down; four such steps
  judged together (Holm: 4 x 0.029) can never reach alpha, so they are
  unconfirmed and the exit code says no step down."""
  rng = np.random.default_rng(16)
  for batch in (16, 32, 64, 128):
    write_history(tmp_path / 'all', [1000.0, 900.0], rng, runs_per_point=4,
                  noise=0.005, batch_size_per_device=batch)
  history = analysis.analyse(store.load_runs(tmp_path / 'all'), 'commit')
  steps = [step for one in history.histories for step in one.steps]
  assert len(steps) == 4
  for step in steps:
    assert step.result.p_value == pytest.approx(2 / 70)
    assert step.result.p_adjusted == pytest.approx(4 * 2 / 70)
    assert step.kind == change_points.UNCONFIRMED
  code, out, _ = run_history(capsys, tmp_path / 'all', '--order', 'commit')
  assert code == command.EXIT_NO_STEP_DOWN, out
  assert 'p 0.029, Holm 0.11' in out
  assert '0 step(s) down, 0 up, 4 unconfirmed' in out
  # One configuration alone: the same runs are a step down.
  write_history(tmp_path / 'one', [1000.0, 900.0], rng, runs_per_point=4,
                noise=0.005)
  code, out, _ = run_history(capsys, tmp_path / 'one', '--order', 'commit')
  assert code == command.EXIT_STEP_DOWN, out
  assert 'p 0.029, Holm 0.029' in out


def test_a_step_up_in_epochs_to_target_is_the_regression(tmp_path, capsys):
  """--metric epochs_to_target: convergence followed over commits, the
  speed unchanged; commit 6 needs half as many epochs again."""
  from tests.results.history_factory import START  # pylint: disable=g-import-not-at-top
  import datetime  # pylint: disable=g-import-not-at-top
  from tests.results.record_factory import make_record, write_record  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(13)
  for point, epochs in enumerate([6.0] * 6 + [9.0] * 6):
    for repeat in range(3):
      record = make_record(step_times=0.01 * np.ones(10), started_at=(
          START + datetime.timedelta(hours=3 * point + repeat)).strftime(
              '%Y-%m-%dT%H:%M:%SZ'))
      record['summary']['epochs_to_target'] = epochs * (
          1 + rng.normal(0, 0.01))
      record['environment']['harness_commit'] = sha(point)
      record['environment']['harness_commit_time'] = (
          START + datetime.timedelta(days=point)).isoformat()
      write_record(tmp_path, record)
  code, out, _ = run_history(capsys, tmp_path, '--order', 'commit',
                             '--metric', 'epochs_to_target')
  assert code == command.EXIT_STEP_DOWN, out
  assert 'a step up is the regression' in out
  assert '1 step(s) down' not in out and '0 step(s) down, 1 up' in out, out
  assert 'epochs to target' in out
  # Its speed has no step: the default metric finds none.
  code, out, _ = run_history(capsys, tmp_path, '--order', 'commit')
  assert code == command.EXIT_NO_STEP_DOWN, out
