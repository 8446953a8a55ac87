"""results.detection_power: what compare says about the power of its test,
from the measured figures only."""

import numpy as np

from results import compare
from results import detection_power
from results import comparison as comparison_lib
from results import store
from tests.results.record_factory import write_runs

FIGURES = {
    'version': 1,
    'source': {'command': 'python studies/detection_power.py',
               'mode': 'full', 'date': '2026-11-25 03:00 UTC',
               'cpu_model': 'test cpu'},
    'settings': {'ns': [3, 5, 10], 'slowdowns_pct': [2, 5, 10]},
    'models': {
        'lenet': {'false_alarm_rate': {'3': 0.0, '5': 0.03, '10': 0.04},
                  'detection_rate': {'2': {'3': 0.0, '5': 0.2, '10': 0.6},
                                     '5': {'3': 0.0, '5': 0.96, '10': 1.0},
                                     '10': {'3': 0.0, '5': 1.0, '10': 1.0}}},
        'resnet50': {'false_alarm_rate': {'3': 0.0, '5': 0.02, '10': 0.08},
                     'detection_rate': {'2': {'3': 0.0, '5': 0.1, '10': 0.9},
                                        '5': {'3': 0.0, '5': 0.5, '10': 1.0},
                                        '10': {'3': 0.0, '5': 0.97,
                                               '10': 1.0}}},
    },
}


def test_answers_come_from_the_measured_figures_only():
  power = detection_power.Power(FIGURES)
  assert power.phrase('lenet', 5) == 'could detect >= 5% at n=5'
  # 7 runs: not measured, so the next smaller measured count answers.
  assert power.phrase('lenet', 7) == ('could detect >= 5% at n=7 (as '
                                      'measured at n=5)')
  assert power.phrase('lenet', 3) == ('could not reliably detect even 10% '
                                      'at n=3')
  assert power.phrase('lenet', 2) == ('n=2 is below the run counts measured '
                                      '(3, 5, 10)')
  # Too many false alarms at 10 for resnet50: no answer there.
  assert power.detectable('resnet50', 10) == (None, True)
  # ... and the words say why: not a lack of power (it caught 10% every
  # time), the A/A runs alone.
  assert power.phrase('resnet50', 10) == (
      'false alarms 8.0% at n=10, over the 5% allowed: no size counts as '
      'reliably detected')
  assert power.phrase('resnet50', 20) == (
      'false alarms 8.0% at n=20 (as measured at n=10), over the 5% allowed: '
      'no size counts as reliably detected')
  assert power.detectable('resnet50', 5) == (10.0, True)
  # An unmeasured model borrows the worst measured figures, and says so.
  assert power.phrase('trivial', 5) == ('could detect >= 10% at n=5 '
                                        '(measured on other models)')
  assert power.repeat_for('lenet') == 5
  assert power.suggestion('lenet') == ('suite --repeat 5 catches 5% '
                                       '(measured)')
  assert 'no measured run count (up to 10)' in power.suggestion('resnet50')


def test_no_figures_means_not_measured(tmp_path):
  power = detection_power.Power.from_file(tmp_path / 'absent.json')
  assert not power.measured
  assert 'not measured' in power.phrase('lenet', 5)
  (tmp_path / 'bad.json').write_text('{"version": 99}')
  assert not detection_power.Power.from_file(tmp_path / 'bad.json').measured


def test_write_and_load_round_trip(tmp_path):
  path = tmp_path / 'figures.json'
  detection_power.write(dict(FIGURES), path)
  assert detection_power.load(path)['models'] == FIGURES['models']


def test_compare_rows_say_what_their_run_count_could_detect(tmp_path):
  rng = np.random.default_rng(8)
  write_runs(tmp_path, 1000 * (1 + rng.normal(0, 0.01, 3)), rng, label='A',
             model='lenet')
  write_runs(tmp_path, 1000 * (1 + rng.normal(0, 0.01, 3)), rng, label='B',
             model='lenet')
  frame = store.load_runs(tmp_path)
  result = comparison_lib.compare_groups(
      frame, 'label', 'A', 'B', power=detection_power.Power(FIGURES))
  (row,) = result.rows
  assert row.verdict == 'inconclusive'
  assert row.power == 'could not reliably detect even 10% at n=3'
  assert 'suite --repeat 5 catches 5% (measured)' in row.note
  from results import tables
  text = tables.render_markdown(result)
  assert '| detectable |' in text
  assert 'from results/detection_power.json (full run' in text


def test_the_repository_file_says_where_its_figures_come_from():
  data = detection_power.load()
  assert data is not None, 'results/detection_power.json is missing'
  source = data['source']
  assert source['mode'] in ('none', 'quick', 'full')
  assert source['command'].startswith('python studies/detection_power.py')
  assert source['date'] and source['cpu_model']
  if source['mode'] == 'none':
    assert not data['models'] and 'not measured' in source['note']
  if source['mode'] == 'quick':
    assert 'not a measurement' in source['note']
