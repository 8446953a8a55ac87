"""The dashboard's answering charts carry the numbers they answer with.

Each chart is read back from its matplotlib Figure (the points, intervals
and cell texts drawn) and checked against what `compare` computes from the
same runs; each page's first chart is the one that answers its question.
"""

import json
import re

import numpy as np
import pytest

from results import comparison as comparison_lib
from results import dashboard
from results import record_io
from results import stats
from results import store
from results import tables
from results.charts import change as change_chart
from results.charts import convergence as convergence_chart
from results.charts import versions as versions_chart
from tests.results.record_factory import make_record, write_record, write_runs


def _render(folder, output, *extra):
  return dashboard.main(['dashboard', '--result_dir', str(folder),
                         '--output', str(output)] + list(extra))


def _first_chart(output):
  page = (output / 'index.html').read_text()
  return re.search(r'<img src="([\w]+)\.png"', page).group(1), page


@pytest.fixture(scope='module')
def ab_runs(tmp_path_factory):
  """Five configurations, A against B: one 8% slower, one 4% faster, three
  unchanged; six runs a side. Two more with one run a side: no test, and
  the same note on both rows."""
  folder = tmp_path_factory.mktemp('ab')
  rng = np.random.default_rng(7)
  speeds = {'trivial': 0.92, 'lenet': 1.04, 'resnet20': 1.0,
            'alexnet': 1.0, 'googlenet': 1.0}
  for model, speed in speeds.items():
    for label, factor in (('A', 1.0), ('B', speed)):
      write_runs(folder, 500 * factor * (1 + rng.normal(0, 0.005, 6)), rng,
                 label=label, model=model)
  for model in ('vgg16', 'inception3'):
    for label in ('A', 'B'):
      write_runs(folder, [100.0], rng, label=label, model=model)
  return folder


def test_the_forest_plot_draws_compare_s_changes_and_verdicts(ab_runs):
  frame = store.load_runs([str(ab_runs)])
  result = comparison_lib.compare_groups(frame, 'label', 'A', 'B')
  figure = change_chart.forest(result)
  axes = figure.axes[0]
  drawn = []
  for container in axes.containers:
    data_line, _, (bars,) = container.lines
    (low, _), (high, _) = bars.get_segments()[0]
    drawn.append((container.get_label(), data_line.get_xdata()[0], low, high,
                  data_line.get_color()))
  table = json.loads(tables.render_json(result))['rows']
  expected = sorted(
      ((row['config']['model'], row['change_pct'], row['change_pct_low'],
        row['change_pct_high'],
        change_chart.VERDICT_COLOURS[row['verdict']]) for row in table
       if row['change_pct'] is not None),
      key=lambda r: r[1])
  # One run a side has no estimate, and no point.
  assert len(expected) == 5 == len(table) - 2
  # Slowest at the top, every point and interval compare's own.
  assert [d[0] for d in drawn] == [e[0] for e in expected]
  for got, want in zip(drawn, expected):
    assert got[1:4] == pytest.approx(want[1:4], abs=1e-9)
    assert got[4] == want[4]
  assert expected[0][0] == 'trivial' and expected[0][4] == (
      change_chart.VERDICT_COLOURS[stats.REGRESSION])
  # The --min_effect band is shaded around zero.
  band = [p for p in axes.patches if p.get_facecolor()[:3] == (
      0.92, 0.92, 0.92)]
  assert len(band) == 1
  assert (band[0].get_x(), band[0].get_x() + band[0].get_width()) == (
      -result.min_effect_pct, result.min_effect_pct)


def test_an_a_b_page_opens_on_the_change_and_says_each_note_once(
    ab_runs, tmp_path):
  output = tmp_path / 'site'
  assert _render(ab_runs, output, '--by', 'label') == 0
  first, page = _first_chart(output)
  assert first == 'change'
  assert change_chart.CAPTION.split('?')[0] in page
  assert '<a href="change.svg">SVG</a>' in page
  # No path of the machine that measured: folders by base name.
  assert str(ab_runs) not in page and ab_runs.name in page
  # An explanation both one-run rows share is said once, below the table,
  # and both rows cite it; what differs (their step medians) stays in each.
  notes = re.findall(r'<li>([^<]*)</li>', page)
  assert page.count('one run on a side: no verdict') == 1
  assert notes[0].startswith('one run on a side: no verdict')
  cells = re.findall(r'<td>(per-step medians[^<]*)</td>', page)
  assert len(cells) == 2 and all(c.endswith('[1] [2]') for c in cells), cells


@pytest.fixture(scope='module')
def matrix_runs(tmp_path_factory):
  """Three TF versions, two configurations: 2.21.0 is 10% slower on
  trivial; six runs each."""
  folder = tmp_path_factory.mktemp('matrix')
  rng = np.random.default_rng(9)
  for version, trivial in (('2.19.1', 1.0), ('2.20.0', 1.0),
                           ('2.21.0', 0.9)):
    write_runs(folder, 800 * trivial * (1 + rng.normal(0, 0.005, 6)), rng,
               tf_version=version)
    write_runs(folder, 300 * (1 + rng.normal(0, 0.005, 6)), rng,
               tf_version=version, model='lenet')
  return folder


def test_the_version_matrix_writes_each_cell_s_change_and_family_verdict(
    matrix_runs):
  frame = store.load_runs([str(matrix_runs)])
  matrix = versions_chart.VersionMatrix(frame, None, 0.05, 2.0)
  assert matrix.versions == ['2.19.1', '2.20.0', '2.21.0']
  figure = versions_chart.heatmap(matrix)
  texts = [t.get_text() for t in figure.axes[0].texts]
  # The same family by hand: each version against the reference, judged
  # together with Holm.
  family, expected = [], {}
  for version in ('2.20.0', '2.21.0'):
    result = comparison_lib.compare_groups(frame, 'tf_version', '2.19.1',
                                           version, judged=False)
    for row in result.rows:
      expected[(row.key[0], version)] = row
      family.append(row)
  comparison_lib.judge_family(family, 0.05, 2.0)
  cells = iter(texts)
  for key in matrix.keys:
    for version in matrix.versions:
      text = next(cells)
      if version == '2.19.1':
        assert text == 'reference'
        continue
      row = expected[(key[0], version)]
      assert text == '%+.1f%%\n%s' % (row.result.change_pct, row.verdict)
  assert expected[('trivial', '2.21.0')].verdict == stats.REGRESSION
  assert expected[('lenet', '2.20.0')].verdict == stats.NO_CHANGE
  # Every run a point on the right, against its reference median.
  points = sum(len(c.get_offsets()) for c in figure.axes[2].collections)
  assert points == 36


def test_a_matrix_page_opens_on_the_version_matrix(matrix_runs, tmp_path):
  output = tmp_path / 'site'
  assert _render(matrix_runs, output) == 0
  first, page = _first_chart(output)
  assert first == 'versions'
  assert 'TensorFlow versions against 2.19.1' in page
  assert _render(matrix_runs, output, '--reference', '2.20.0') == 0
  assert 'TensorFlow versions against 2.20.0' in (
      output / 'index.html').read_text()
  assert _render(matrix_runs, output, '--reference', '2.1.0') == 2
  # A pair asked for by name is the question: its change comes first.
  assert _render(matrix_runs, output, '--baseline', '2.19.1', '--candidate',
                 '2.21.0') == 0
  assert _first_chart(output)[0] == 'change'


def _convergence_record(label, times, accuracies, target, peak_rss):
  record = make_record(model='resnet20', label=label, data_name='cifar10')
  evaluations = [{'step': 10 * i, 'global_step': 10 * i, 'epoch': float(i),
                  'elapsed_sec': t, 'training_sec': t * 0.9,
                  'top_1_accuracy': a, 'top_5_accuracy': 1.0,
                  'num_examples': 100}
                 for i, (t, a) in enumerate(zip(times, accuracies), 1)]
  reached = [t for t, a in zip(times, accuracies) if a >= target]
  record['summary'].update(
      evaluations=evaluations, target_top_1_accuracy=target,
      time_to_target_sec=reached[0] if reached else None,
      epochs_to_target=float(times.index(reached[0]) + 1) if reached else
      None, peak_rss_mb=peak_rss)
  if not reached:
    record['status'] = 'target_not_reached'
  return record


@pytest.fixture(scope='module')
def convergence_runs(tmp_path_factory):
  folder = tmp_path_factory.mktemp('convergence')
  write_record(folder, _convergence_record('A', [10, 20, 30],
                                           [0.3, 0.6, 0.8], 0.75, 900.0))
  write_record(folder, _convergence_record('A', [11, 22, 33],
                                           [0.2, 0.5, 0.7], 0.75, 910.0))
  write_record(folder, _convergence_record('B', [12, 24, 36],
                                           [0.5, 0.8, 0.9], 0.75, 1200.0))
  return folder


def test_the_accuracy_chart_draws_every_curve_and_the_target(
    convergence_runs):
  frame = store.load_runs([str(convergence_runs)])
  figure = convergence_chart.accuracy(frame, 'label')
  curves, target = figure.axes[0], figure.axes[1]
  lines = [(list(l.get_xdata()), list(l.get_ydata()))
           for l in curves.get_lines() if l.get_linestyle() == '-']
  assert sorted(lines) == sorted([([10, 20, 30], [0.3, 0.6, 0.8]),
                                  ([11, 22, 33], [0.2, 0.5, 0.7]),
                                  ([12, 24, 36], [0.5, 0.8, 0.9])])
  dashed = [l for l in curves.get_lines() if l.get_linestyle() == '--']
  assert [list(l.get_ydata()) for l in dashed] == [[0.75, 0.75]]
  # Times to target: A's one run that reached it (30 s), B's (24 s); the
  # run that never did is counted, not drawn as 0.
  times = sorted(float(y) for c in target.collections
                 for _, y in c.get_offsets())
  assert times == [24.0, 30.0]
  assert '1 run(s) never reached it' in target.get_title()


def test_the_memory_chart_draws_every_run_s_peak(convergence_runs):
  frame = store.load_runs([str(convergence_runs)])
  figure = convergence_chart.memory(frame, 'label')
  drawn = sorted(float(y) for c in figure.axes[0].collections
                 for _, y in c.get_offsets())
  assert drawn == [900.0, 910.0, 1200.0]
  medians = sorted(p.get_height() for p in figure.axes[0].patches)
  assert medians == [905.0, 1200.0]


def test_a_convergence_page_opens_on_accuracy_against_time(
    convergence_runs, tmp_path):
  output = tmp_path / 'site'
  assert _render(convergence_runs, output, '--metric',
                 'time_to_target_sec') == 0
  first, page = _first_chart(output)
  assert first == 'accuracy'
  assert '<img src="memory.png"' in page
  # One run a side reached the target: no change to estimate, said so.
  assert 'No configuration has runs on both sides' in page


def test_a_bisect_folder_names_its_steps_and_the_release_it_found(tmp_path):
  """Runs of four releases taken as bisect takes them, each step one plan:
  the ends first, then the middle ones; 2.20.0 is the first slower one."""
  rng = np.random.default_rng(13)
  steps = [(('2.18.0', 1.0), ('2.21.0', 0.9)), (('2.19.0', 1.0),),
           (('2.20.0', 0.9),)]
  for number, step in enumerate(steps):
    for version, speed in step:
      # Ten pairs in the first step: 2.21.0 is called slower too.
      count = 10 if number == 0 else 6
      for path in write_runs(tmp_path / 'runs', 800 * speed * (
          1 + rng.normal(0, 0.003, count)), rng, tf_version=version,
                             plan='step%d' % number):
        record = record_io.read_record(path)
        record['started_at'] = '2026-01-0%dT00:00:00Z' % (number + 1)
        record_io.write_record_atomically(path, record)
  assert _render(tmp_path / 'runs', tmp_path / 'site') == 0
  page = (tmp_path / 'site' / 'index.html').read_text()
  assert _first_chart(tmp_path / 'site')[0] == 'versions'
  assert 'First release called slower than 2.18.0: 2.20.0.' in page, page
  frame = store.load_runs([str(tmp_path / 'runs')])
  matrix = versions_chart.VersionMatrix(frame, None, 0.05, 2.0)
  assert [matrix.cells[(k, '2.21.0')].verdict for k in matrix.keys] == [
      stats.REGRESSION]
  assert ('Steps, in the order their runs were taken: 1. 2.18.0, 2.21.0; '
          '2. 2.19.0; 3. 2.20.0.') in page, page
