"""`tf_cnn_benchmarks bisect`: releases, the search's decisions, the command.

The command runs here with the fake benchmark in fake venvs (wrappers of
this interpreter) over made-up releases 9.9.0 .. 9.9.4; a real bisect over
TensorFlow releases is test_bisect_real.py.
"""

import io
import json
import os
import re
import subprocess
import sys
import types

import pytest

from results import detection_power
from results import stats
from results import store
from results import suite
from results import venvs
from results.bisect import command
from results.bisect import releases
from results.bisect import search
from results.errors import UsageError
from tests.results.test_detection_power import FIGURES
from tests.results.test_matrix import _fake_venv
from tests.results.test_suite import FAKE_BENCHMARK

RELEASES = ['9.9.0', '9.9.1', '9.9.2', '9.9.3', '9.9.4']
SLOWDOWN = 'TF_CNN_BENCHMARKS_TEST_SLOWDOWN'


# -- releases ---------------------------------------------------------------

def test_index_answer_keeps_final_releases_in_pep440_order():
  answer = json.dumps({'name': 'tensorflow-cpu', 'versions': [
      '2.10.0', '2.9.1', '2.15.0.post1', '2.15.0', '2.16.0rc0', '2.17.0.dev1',
      'not-a-version']})
  assert releases.parse_index_answer(answer) == [
      '2.9.1', '2.10.0', '2.15.0', '2.15.0.post1']


def test_index_is_asked_through_pip_and_its_failure_is_reported():
  seen = []

  def fake_run(command, **kwargs):
    seen.append(command)
    return subprocess.CompletedProcess(command, 1, '', 'ERROR: No matching '
                                       'distribution found\n')
  with pytest.raises(releases.IndexUnavailable, match='No matching'):
    releases.list_releases('tensorflow-cpu', '/py', run=fake_run)
  assert seen == [['/py', '-m', 'pip', 'index', 'versions', '--json',
                   '--disable-pip-version-check', 'tensorflow-cpu']]


@pytest.mark.parametrize('good, bad, message', [
    ('9.9.3', '9.9.1', 'is not older than'),
    ('9.9.1', '9.9.1', 'is not older than'),
    ('9.8.0', '9.9.1', '--good 9.8.0 is not a release'),
    ('9.9.0', 'latest', "--bad 'latest' is not a version"),
])
def test_bad_ends(good, bad, message):
  with pytest.raises(UsageError, match=message):
    releases.between(RELEASES, good, bad)


def test_between_includes_both_ends_however_spelled():
  assert releases.between(RELEASES, '9.9.1', '9.9.3') == [
      '9.9.1', '9.9.2', '9.9.3']
  assert releases.between(RELEASES, '9.9.1.0', '9.9.2') == ['9.9.1', '9.9.2']


# -- the search's decisions -------------------------------------------------

def _row(verdict, low=-1.0):
  """A comparison row: its verdict, and its interval's low end in %."""
  return types.SimpleNamespace(verdict=verdict, result=types.SimpleNamespace(
      change_pct_low=low))


REG, SAME, FASTER, UNSURE = (stats.REGRESSION, stats.NO_CHANGE,
                             stats.IMPROVEMENT, stats.INCONCLUSIVE)


@pytest.mark.parametrize('ends, low, high, first, action', [
    (REG, REG, SAME, True, search.MIDDLE_BAD),
    (REG, REG, REG, True, search.MIDDLE_BAD),     # the first slowdown wins
    (REG, SAME, REG, True, search.MIDDLE_GOOD),
    (REG, FASTER, REG, True, search.MIDDLE_GOOD),
    (REG, SAME, SAME, True, search.MORE_RUNS),    # split: never a guess
    (REG, UNSURE, REG, True, search.MORE_RUNS),
    (REG, SAME, UNSURE, True, search.MORE_RUNS),
    (UNSURE, REG, SAME, True, search.MORE_RUNS),
    (SAME, SAME, SAME, True, search.NO_SLOWDOWN),
    (FASTER, SAME, SAME, True, search.NO_SLOWDOWN),
    # No change, but the interval still holds a 2% slowdown: too few runs.
    ((SAME, -2.5), SAME, SAME, True, search.MORE_RUNS),
    (SAME, REG, SAME, False, search.MORE_RUNS),   # contradicts a past step
    (REG, None, SAME, True, search.SKIP_MIDDLE),
    (None, REG, SAME, True, search.END_FAILED),
])
def test_decide(ends, low, high, first, action):
  rows = [(_row(*v) if isinstance(v, tuple) else _row(v)) if v else None
          for v in (ends, low, high)]
  judgement = search.decide(*rows, first, '1.0', '1.1', '1.2')
  assert judgement.action == action
  if action == search.MIDDLE_BAD:
    assert judgement.deciding is rows[1]
  if action == search.MIDDLE_GOOD:
    assert judgement.deciding is rows[2]


def test_adjacent_releases_are_judged_on_the_ends_alone():
  ends = _row(REG)
  judgement = search.decide(ends, None, None, True, '1.0', None, '1.1')
  assert judgement.action == search.ADJACENT_SLOWER
  one = search.Range('c', ['1.0', '1.1'])
  assert one.middle() is None and one.versions_to_run() == ['1.0', '1.1']
  one.apply(judgement, None)
  assert one.status == search.FOUND and one.result is ends


def test_range_narrows_to_adjacent_releases():
  one = search.Range('c', RELEASES)
  assert one.middle() == '9.9.2'
  one.apply(search.Judgement(search.MIDDLE_GOOD, '', _row(REG)), '9.9.2')
  assert one.releases == ['9.9.2', '9.9.3', '9.9.4'] and one.confirmed
  assert one.middle() == '9.9.3'
  one.apply(search.Judgement(search.MIDDLE_BAD, '', _row(REG)), '9.9.3')
  assert (one.good, one.bad, one.status) == ('9.9.2', '9.9.3', search.FOUND)


def test_a_middle_without_runs_is_skipped_for_its_neighbour():
  one = search.Range('c', RELEASES)
  one.apply(search.Judgement(search.SKIP_MIDDLE, ''), '9.9.2')
  assert one.middle() == '9.9.1' and one.status == search.OPEN
  one.apply(search.Judgement(search.SKIP_MIDDLE, ''), '9.9.1')
  assert one.middle() == '9.9.3'
  one.apply(search.Judgement(search.SKIP_MIDDLE, ''), '9.9.3')
  assert one.status == search.STOPPED
  assert 'somewhere in that range' in one.message


def test_an_end_without_runs_stops_the_search_saying_why():
  one = search.Range('c', RELEASES)
  one.apply(search.decide(None, None, None, True, '9.9.0', '9.9.2', '9.9.4'),
            '9.9.2')
  assert one.status == search.STOPPED
  assert one.message == ('9.9.0 or 9.9.4 had no successful run in this step, '
                         'so nothing can be judged')


def test_configurations_with_the_same_range_are_measured_together():
  ranges = [search.Range(name, RELEASES) for name in 'abc']
  assert search.next_group(ranges) == ranges
  ranges[0].apply(search.Judgement(search.MIDDLE_GOOD, ''), '9.9.2')
  ranges[2].apply(search.Judgement(search.MIDDLE_GOOD, ''), '9.9.2')
  assert search.next_group(ranges) == [ranges[0], ranges[2]]
  ranges[1].status = search.NOT_SLOWER
  ranges[0].status = ranges[2].status = search.FOUND
  assert search.next_group(ranges) == []


# -- the command, with the fake benchmark -----------------------------------

@pytest.fixture
def fake_releases(tmp_path, monkeypatch):
  """Made-up releases with ready fake venvs; the index lists them."""
  for version in RELEASES:
    _fake_venv(tmp_path / 'venvs', version)
  monkeypatch.setattr(releases, 'list_releases', lambda: list(RELEASES))
  monkeypatch.delenv(venvs.TEST_ENV_VAR, raising=False)
  return tmp_path


def _slowed(versions, fraction='0.3', **more):
  by_version = {v: {SLOWDOWN: fraction} for v in versions}
  for version, variables in more.items():
    by_version.setdefault(version.replace('_', '.'), {}).update(variables)
  return json.dumps(by_version)


def _bisect(tmp_path, argv, flags=('--model=trivial', '--jitter=0.02')):
  out = io.StringIO()
  code = command.main(
      ['bisect'] + [str(a) for a in argv] + [
          '--result_dir', str(tmp_path / 'runs'), '--venv_dir',
          str(tmp_path / 'venvs'), '--benchmark_script', FAKE_BENCHMARK,
          '--allow_injected_slowdown'] + (['--'] + list(flags) if flags
                                          else []), stream=out)
  return code, out.getvalue()


TWO_CONFIGS = """
[[config]]
name = "a"
model = "trivial"
jitter = 0.02
[[config]]
name = "b"
model = "lenet"
jitter = 0.02
"""


def _two_configs(tmp_path):
  suite_path = tmp_path / 'suite.toml'
  suite_path.write_text(TWO_CONFIGS)
  return ['--suite', str(suite_path)]


def test_finds_the_release_that_got_slower(fake_releases, monkeypatch):
  tmp_path = fake_releases
  monkeypatch.setenv(venvs.TEST_ENV_VAR, _slowed(['9.9.3', '9.9.4']))
  code, out = _bisect(tmp_path, ['--good', '9.9.0', '--bad', '9.9.4',
                                 '--repeat', '6'])
  assert code == command.EXIT_FOUND, out
  assert '5 tensorflow' in out and '9.9.0 9.9.1 9.9.2 9.9.3 9.9.4' in out
  assert '6 run(s) per release per step (given by --repeat)' in out
  # Step 1: 9.9.2 measured against both ends, judged good.
  assert ('== step 1: 9.9.0 (good) .. 9.9.4 (bad), 3 release(s) between: '
          '9.9.2 against both ends, 6 run(s) each' in out)
  # A round's runs are pairs: the paired test judges them.
  assert ('ends 9.9.0 -> 9.9.4: ' in out
          and ', paired Wilcoxon: regression (6 vs 6 runs; detectable '
          in out), out
  assert ('=> 9.9.2 is not slower than 9.9.0 (no change) and 9.9.4 is '
          'slower than it, so it is good; next: 9.9.2 .. 9.9.4' in out)
  assert '=> 9.9.3 is slower than 9.9.2, so it is bad; found' in out
  found = re.search(r'first slower in 9\.9\.3 \(the release after 9\.9\.2\): '
                    r'([-+\d.]+)% \[([-+\d.]+)%, ([-+\d.]+)%\]', out)
  assert found, out
  # 30% longer steps: images/sec x 1/1.3, -23%.
  size, low, high = map(float, found.groups())
  assert low <= size <= high and -27 < size < -19
  # Every verdict line names the runs slowed on purpose.
  assert 'slowed on purpose by 30% (test-only)' in out
  frame = store.load_runs([tmp_path / 'runs'])
  assert len(frame) == 2 * 3 * 6     # two steps of three releases x 6 runs
  labels = frame['label'].value_counts().to_dict()
  assert labels == {'tf-9.9.0': 6, 'tf-9.9.2': 12, 'tf-9.9.4': 12,
                    'tf-9.9.3': 6}
  slowed = frame.groupby('label')['injected_slowdown'].max().to_dict()
  assert slowed['tf-9.9.3'] == 0.3 and slowed['tf-9.9.2'] != 0.3


def test_no_slowdown_between_the_ends_is_not_bisected(fake_releases):
  # Runs within +-0.3%: the interval rules out a 2% slowdown at once.
  code, out = _bisect(fake_releases, ['--good', '9.9.0', '--bad', '9.9.4',
                                      '--repeat', '6'],
                      flags=('--model=trivial', '--jitter=0.003'))
  assert code == command.EXIT_NOT_FOUND, out
  assert '9.9.4 is not slower than 9.9.0 (no change): nothing to bisect' in out
  assert out.count('== step') == 1


def test_an_inconclusive_step_gets_the_runs_its_spread_asks_for(
    fake_releases, monkeypatch):
  """Two configurations, both 30% slower, 6 runs: alone each would be a
  regression (p = 2/64), but judged together (Holm) 6 pairs can never
  reach it, so the step is inconclusive and goes on with the runs compare
  says catch 5%: from a 2% spread that is the fewest that can decide for
  two configurations, 7 pairs, not a blind doubling."""
  monkeypatch.setenv(venvs.TEST_ENV_VAR, _slowed(['9.9.1']))
  code, out = _bisect(fake_releases, ['--good', '9.9.0', '--bad', '9.9.1',
                                      '--repeat', '6'] + _two_configs(
                                          fake_releases), flags=())
  assert code == command.EXIT_FOUND, out
  assert 'the two ends (adjacent)' in out
  assert '(Holm 0.062), paired Wilcoxon: inconclusive' in out, out
  assert '9.9.0 -> 9.9.1 is inconclusive at this many runs' in out
  assert 'a, b: now 7 run(s) per release' in out
  assert '(7/7) tf-9.9.1: ok' in out
  assert out.count('first slower in 9.9.1 (the release after 9.9.0)') == 2
  assert '7 vs 7 runs' in out


def test_a_top_up_goes_on_alternating_the_order(monkeypatch):
  """The balanced order (A B, B A, ...) goes on across a step's top-up:
  after 7 rounds, round 8 runs B A, not A B twice in a row."""
  monkeypatch.delenv(venvs.TEST_ENV_VAR, raising=False)
  configs = suite.load_configs(None, ['--model=trivial'], None)
  versions = ['9.9.0', '9.9.1']
  bisection = command.Bisection(None, configs, versions, 9, io.StringIO())
  bisection.pythons = {v: sys.executable for v in versions}
  group = [types.SimpleNamespace(config=configs[0].name)]

  def order(made):
    return [(run.repeat_index, run.label) for run in bisection.plan(
        group, versions, {configs[0].name: made})]
  assert order(7) == [(8, 'tf-9.9.1'), (8, 'tf-9.9.0'),
                      (9, 'tf-9.9.0'), (9, 'tf-9.9.1')]
  assert order(6)[:2] == [(7, 'tf-9.9.0'), (7, 'tf-9.9.1')]


def test_a_step_with_a_run_run_again_says_so_though_none_failed(
    fake_releases, monkeypatch, tmp_path):
  monkeypatch.setenv(venvs.TEST_ENV_VAR, _slowed(['9.9.1']))
  monkeypatch.setenv('TF_CNN_BENCHMARKS_TEST_FAKE_BUSY_ONCE',
                     str(tmp_path / 'busy'))
  code, out = _bisect(fake_releases, ['--good', '9.9.0', '--bad', '9.9.1',
                                      '--repeat', '6'])
  assert code == command.EXIT_FOUND, out
  assert 'FAILED' not in out
  assert ('1 run(s) were run again (tries set aside in all: 1) because '
          'other processes used more of the CPU') in out, out


def test_inconclusive_at_the_cap_stops_and_says_what_to_run(fake_releases,
                                                            monkeypatch):
  monkeypatch.setenv(venvs.TEST_ENV_VAR, _slowed(['9.9.1']))
  code, out = _bisect(fake_releases, ['--good', '9.9.0', '--bad', '9.9.1',
                                      '--repeat', '6', '--max_repeat', '6']
                      + _two_configs(fake_releases), flags=())
  assert code == command.EXIT_NOT_FOUND, out
  assert ('not found: inconclusive at 6 runs per release (--max_repeat)'
          in out)
  assert 're-run with --good 9.9.0 --bad 9.9.1 --repeat 7' in out


@pytest.mark.parametrize('slowed, code, answer', [
    (['9.9.4'], command.EXIT_FOUND,
     'first slower in 9.9.4 (the release after 9.9.3)'),
    # Slower from 9.9.3 on: 9.9.2 or 9.9.3 did it, and 9.9.2 cannot tell.
    (['9.9.3', '9.9.4'], command.EXIT_NOT_FOUND,
     'not found: every release between 9.9.1 and 9.9.3 had no successful '
     'run (9.9.2), so the slowdown is somewhere in that range'),
])
def test_a_middle_that_cannot_run_is_skipped(fake_releases, monkeypatch,
                                             slowed, code, answer):
  monkeypatch.setenv(venvs.TEST_ENV_VAR, _slowed(slowed))
  # 9.9.2's venv is broken: its python does not exist.
  os.remove(venvs.venv_python(venvs.venv_path(str(fake_releases / 'venvs'),
                                              '9.9.2')))
  got, out = _bisect(fake_releases, ['--good', '9.9.0', '--bad', '9.9.4',
                                     '--repeat', '6'])
  assert got == code, out
  assert '9.9.2 had no successful run; skipping it' in out
  assert '9.9.1 against both ends' in out
  assert answer in out


def test_dry_run_lists_the_first_step(fake_releases, monkeypatch):
  # No measurement to plan by, whatever the checkout's file holds.
  monkeypatch.setattr(detection_power.Power, 'from_file',
                      classmethod(lambda cls: cls(None)))
  code, out = _bisect(fake_releases, ['--good', '9.9.0', '--bad', '9.9.4',
                                      '--dry_run'])
  assert code == 0, out
  assert ('%d run(s) per release per step (the default: results/'
          'detection_power.json holds no full measurement to plan by), '
          'raised when a step is inconclusive' % command.DEFAULT_REPEAT
          ) in out, out
  commands = [line for line in out.splitlines() if 'fake_benchmark' in line]
  assert len(commands) == 3 * command.DEFAULT_REPEAT
  assert [c.rsplit('--label=', 1)[1] for c in commands[:3]] == [
      'tf-9.9.0', 'tf-9.9.2', 'tf-9.9.4']
  assert not os.path.exists(fake_releases / 'runs')


@pytest.mark.parametrize('argv, message', [
    (['--good', '9.9.0', '--bad', '9.9.0'], 'is not older than'),
    (['--good', '9.9.0', '--bad', '9.9.4', '--repeat', '3'],
     '--repeat 3 is too few'),
    # The runs of a round are pairs: 5 pairs cannot reach p < 0.05.
    (['--good', '9.9.0', '--bad', '9.9.4', '--repeat', '5'],
     'fewer than 6 pairs of runs the paired test can never reach p < 0.05'),
    (['--good', '9.9.0', '--bad', '9.9.4', '--repeat', '8', '--max_repeat',
      '7'], 'is below --repeat 8'),
    (['--good', '9.9.0', '--bad', '9.9.9'], '--bad 9.9.9 is not a release'),
])
def test_usage_errors(fake_releases, capsys, argv, message):
  code, _ = _bisect(fake_releases, argv)
  assert code == 2
  err = capsys.readouterr().err
  assert message in err.replace('\n', ' ')
  assert err.count('error:') == 1


def test_test_environment_needs_the_explicit_switch(fake_releases, capsys,
                                                    monkeypatch):
  monkeypatch.setenv(venvs.TEST_ENV_VAR, _slowed(['9.9.3']))
  code = command.main(['bisect', '--good', '9.9.0', '--bad', '9.9.4',
                       '--result_dir', str(fake_releases / 'runs'), '--',
                       '--model=trivial'], stream=io.StringIO())
  assert code == 2
  assert 'pass --allow_injected_slowdown' in capsys.readouterr().err.replace(
      '\n', ' ')


def test_unreadable_index_fails_with_exit_1(fake_releases, monkeypatch):
  def unavailable():
    raise releases.IndexUnavailable('no network')
  monkeypatch.setattr(releases, 'list_releases', unavailable)
  code, out = _bisect(fake_releases, ['--good', '9.9.0', '--bad', '9.9.4'])
  assert code == 1 and 'cannot list the TensorFlow releases: no network' in out


def test_initial_repeat_follows_a_full_power_measurement():
  power = detection_power.Power(FIGURES)   # lenet: 5 runs catch 5%
  # ... but the runs are pairs, and 5 pairs cannot reach p < 0.05: 6.
  repeat, why = command.initial_repeat(None, power, ['lenet'], 0.05)
  assert repeat == 6 and 'caught a 5% slowdown' in why
  # Five configurations: a lone change must reach 0.01 (Holm): 8 pairs.
  repeat, why = command.initial_repeat(None, power, ['lenet'], 0.05, 5)
  assert repeat == 8 and '8: the fewest pairs that can reach p < 0.01' in why
  # resnet50: no measured count catches 5%, so the default, saying why.
  repeat, why = command.initial_repeat(None, power, ['lenet', 'resnet50'],
                                       0.05)
  assert repeat == command.DEFAULT_REPEAT and 'resnet50' in why
  assert command.initial_repeat(7, power, ['lenet'], 0.05) == (
      7, 'given by --repeat')
  quick = detection_power.Power(dict(FIGURES, source=dict(FIGURES['source'],
                                                          mode='quick')))
  repeat, why = command.initial_repeat(None, quick, ['lenet'], 0.05)
  assert repeat == command.DEFAULT_REPEAT and 'no full measurement' in why


def test_cli_knows_bisect():
  from tf_cnn_benchmarks import cli  # pylint: disable=g-import-not-at-top
  assert cli.TOOL_COMMANDS['bisect'] == 'results.bisect.command'


def test_runs_slowed_on_purpose_are_refused_unless_allowed(fake_releases,
                                                           capsys,
                                                           monkeypatch):
  """The injected slowdown set directly (not per version): bisect refuses
  before it runs anything (compare would refuse such runs only after a
  whole step of them). (--allow_injected_slowdown lets them through:
  every other test here passes it.)"""
  monkeypatch.setenv(SLOWDOWN, '0.3')
  argv = ['bisect', '--good', '9.9.0', '--bad', '9.9.1', '--repeat', '6',
          '--result_dir', str(fake_releases / 'runs'), '--venv_dir',
          str(fake_releases / 'venvs'), '--benchmark_script', FAKE_BENCHMARK,
          '--', '--model=trivial']
  code = command.main(argv, stream=io.StringIO())
  assert code == 2
  err = capsys.readouterr().err.replace('\n', ' ')
  assert ('the test-only variable %s is set, so every run would be slowed '
          'on purpose' % SLOWDOWN) in err, err
  assert not os.path.exists(fake_releases / 'runs')


def test_bisects_convergence_by_epochs_to_target(fake_releases, monkeypatch):
  """--metric epochs_to_target: the release that needs more epochs to its
  target is the bad one (the fake's epochs grow with the slowdown)."""
  monkeypatch.setenv(venvs.TEST_ENV_VAR, _slowed(['9.9.3', '9.9.4']))
  code, out = _bisect(fake_releases, ['--good', '9.9.0', '--bad', '9.9.4',
                                      '--repeat', '6', '--metric',
                                      'epochs_to_target'],
                      flags=('--model=trivial', '--jitter=0.02',
                             '--stop_at_top_1_accuracy=0.8'))
  assert code == command.EXIT_FOUND, out
  assert re.search(r'first slower in 9\.9\.3 \(the release after 9\.9\.2\): '
                   r'\+', out), out
