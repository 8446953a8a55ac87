"""results.detection_power: the measured figures bisect plans by, and
nothing it does not measure."""

import os

from results import detection_power

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _share(rate, trials=100):
  """A measured share in the file's format (its interval is not read)."""
  count = round(rate * trials)
  return {'count': count, 'trials': trials, 'rate': rate, 'low': 0.0,
          'high': 1.0}


def _by_n(rates):
  return {n: _share(rate) for n, rate in rates.items()}


FIGURES = {
    'version': 2,
    'source': {'command': 'python studies/detection_power.py',
               'mode': 'full', 'date': '2026-11-25 03:00 UTC',
               'cpu_model': 'test cpu'},
    'settings': {'ns': [3, 5, 10], 'slowdowns_pct': [2, 5, 10]},
    'models': {
        'lenet': {'false_alarms': _by_n({'3': 0.0, '5': 0.03, '10': 0.04}),
                  'power': {'2': _by_n({'3': 0.0, '5': 0.2, '10': 0.6}),
                            '5': _by_n({'3': 0.0, '5': 0.96, '10': 1.0}),
                            '10': _by_n({'3': 0.0, '5': 1.0, '10': 1.0})}},
        'resnet50': {'false_alarms': _by_n({'3': 0.0, '5': 0.02,
                                            '10': 0.08}),
                     'power': {'2': _by_n({'3': 0.0, '5': 0.1, '10': 0.9}),
                               '5': _by_n({'3': 0.0, '5': 0.5, '10': 1.0}),
                               '10': _by_n({'3': 0.0, '5': 0.97,
                                            '10': 1.0})}},
    },
}


def test_answers_come_from_the_measured_figures_only():
  power = detection_power.Power(FIGURES)
  assert power.detectable('lenet', 5) == (5.0, True)
  # 7 runs: not measured, so the next smaller measured count answers.
  assert power.detectable('lenet', 7) == (5.0, True)
  assert power.detectable('lenet', 3) == (None, True)
  assert power.detectable('lenet', 2) == (None, False)
  # Too many false alarms at 10 for resnet50: no answer there.
  assert power.detectable('resnet50', 10) == (None, True)
  assert power.detectable('resnet50', 5) == (10.0, True)
  # An unmeasured model borrows the worst measured figures, and says so.
  assert power.detectable('trivial', 5) == (10.0, False)
  assert power.repeat_for('lenet') == 5
  assert power.repeat_for('resnet50') is None


def test_a_rate_of_few_trials_plans_nothing():
  """6 of 6 slowed trials caught and 0 of 6 false alarms (the repository's
  first measurement of resnet50) is no promise of 95% and 5%."""
  thin = {'version': 2, 'source': {'mode': 'full'},
          'settings': {'ns': [8]},
          'models': {'resnet50': {
              'false_alarms': {'8': _share(0.0, trials=6)},
              'power': {'5': {'8': _share(1.0, trials=6)}}}}}
  power = detection_power.Power(thin)
  assert power.detectable('resnet50', 8) == (None, True)
  assert power.repeat_for('resnet50') is None
  enough = thin['models']['resnet50']
  enough['false_alarms']['8'] = _share(0.0, trials=detection_power.MIN_TRIALS)
  enough['power']['5']['8'] = _share(1.0, trials=detection_power.MIN_TRIALS)
  assert power.repeat_for('resnet50') == 8


def test_no_figures_means_not_measured(tmp_path):
  power = detection_power.Power.from_file(tmp_path / 'absent.json')
  assert not power.measured and not power.full
  assert power.repeat_for('lenet') is None
  (tmp_path / 'bad.json').write_text('{"version": 99}')
  assert not detection_power.Power.from_file(tmp_path / 'bad.json').measured
  # The pool-resampling figures of version 1 plan nothing now.
  (tmp_path / 'old.json').write_text('{"version": 1, "models": {"a": {}}}')
  assert not detection_power.Power.from_file(tmp_path / 'old.json').measured


def test_write_and_load_round_trip(tmp_path):
  path = tmp_path / 'figures.json'
  detection_power.write(dict(FIGURES), path)
  assert detection_power.load(path)['models'] == FIGURES['models']


def test_the_repository_file_says_where_its_figures_come_from():
  data = detection_power.load()
  assert data is not None, 'results/detection_power.json is missing'
  source = data['source']
  assert source['mode'] in ('quick', 'full')
  assert source['command'].startswith('python studies/detection_power.py')
  assert source['recompute'] == ('python studies/detection_power.py '
                                 '--recompute results/'
                                 'detection_power_runs.csv.gz')
  assert source['date'] and source['cpu_model']
  assert os.path.exists(os.path.join(REPO, source['runs_table']))
  if source['mode'] == 'quick':
    assert 'not a measurement' in source['note']


def test_the_repository_file_plans_what_readme_says():
  """README (bisect's N, and the power section): bisect plans resnet50 at
  10 runs from the measurement; trivial and resnet20 answer nothing (no n
  caught their 5% slowdown in 95% of trials)."""
  power = detection_power.Power.from_file()
  assert power.full
  assert power.repeat_for('resnet50') == 10
  assert power.repeat_for('trivial') is None
  assert power.repeat_for('resnet20') is None
