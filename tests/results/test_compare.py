"""`tf_cnn_benchmarks compare`: tables, verdicts and exit codes."""

import json
import math
import uuid

import numpy as np
import pytest

from results import compare
from results import comparison as comparison_lib
from results import stats
from results import store
from tests.results.record_factory import make_record, write_record, write_runs


@pytest.fixture
def two_versions(tmp_path):
  """trivial: 5% slower on 2.21.0; resnet50: unchanged; lenet: only 2.21.0."""
  rng = np.random.default_rng(42)
  for version, trivial_mean in (('2.20.0', 1000.0), ('2.21.0', 950.0)):
    write_runs(tmp_path, trivial_mean * (1 + rng.normal(0, 0.01, 8)), rng,
               model='trivial', tf_version=version, label='tf-' + version)
    write_runs(tmp_path, 100.0 * (1 + rng.normal(0, 0.01, 8)), rng,
               model='resnet50', tf_version=version, label='tf-' + version)
  write_runs(tmp_path, [50.0, 51.0], rng, model='lenet', tf_version='2.21.0',
             label='tf-2.21.0')
  write_record(tmp_path, make_record(model='trivial', tf_version='2.21.0',
                                     status='failed'))
  return tmp_path


def _run(argv, capsys):
  code = compare.main(['compare'] + [str(a) for a in argv])
  captured = capsys.readouterr()
  return code, captured.out, captured.err


def test_markdown_table_flags_the_regression(two_versions, capsys):
  code, out, _ = _run(['--result_dir', two_versions, '--baseline', '2.20.0',
                       '--candidate', '2.21.0'], capsys)
  assert code == compare.EXIT_REGRESSION
  lines = {line.split('|')[1].strip(): line for line in out.splitlines()
           if line.startswith('| ') and not line.startswith('| model |')}
  assert '**regression**' in lines['trivial']
  assert 'no change' in lines['resnet50']
  assert 'missing' in lines['lenet'] and 'only in candidate' in lines['lenet']
  assert '| 8)' not in lines['trivial']  # failed run not counted
  assert '(8)' in lines['trivial'] and '| Mann-Whitney |' in lines['trivial']
  header = next(l for l in out.splitlines() if l.startswith('| model'))
  assert ('| p | p Holm | test | verdict | detectable | runs for 5% |'
          in header)
  assert 'Result: 1 regression, 1 no change, 1 missing' in out


def test_labels_and_improvement_exit_zero(two_versions, capsys):
  # Swapped roles: the candidate is faster, which is not a regression.
  code, out, _ = _run(['--result_dir', two_versions, '--baseline', 'tf-2.21.0',
                       '--candidate', 'tf-2.20.0'], capsys)
  assert code == compare.EXIT_NO_REGRESSION
  assert 'Comparing label' in out and 'improvement' in out


def test_two_folders_and_html_output(tmp_path, capsys):
  rng = np.random.default_rng(0)
  write_runs(tmp_path / 'old', [1000.0, 1001.0, 999.0, 1002.0, 998.0], rng)
  write_runs(tmp_path / 'new', [1000.5, 1001.5, 999.5, 1002.5, 998.5], rng)
  output = tmp_path / 'report' / 'compare.html'
  code, out, _ = _run([tmp_path / 'old', tmp_path / 'new', '--output', output],
                      capsys)
  assert code == 0
  assert 'wrote' in out
  page = output.read_text()
  assert page.startswith('<!DOCTYPE html>')
  assert '<table class="comparison">' in page and 'no change' in page


def _cells(out, model):
  """{column: cell} of the table row of one model."""
  header = next(l for l in out.splitlines() if l.startswith('| model'))
  row = next(l for l in out.splitlines() if l.startswith('| %s ' % model))
  names = [c.strip() for c in header.split('|')[1:-1]]
  return dict(zip(names, [c.strip() for c in row.split('|')[1:-1]]))


def test_single_run_a_side_gets_no_verdict(tmp_path, capsys):
  """Steps of one process are not independent samples: a 10% slower single
  run is no regression, and the row says how many runs would do; its steps
  are shown as a description only. (It was once judged on its steps: two
  runs of one configuration were then called a regression in 31% of
  simulated trials.)"""
  slow_steps = [0.1 * 1.1] * 5 + [0.1 * 1.12] * 5
  write_record(tmp_path, make_record(label='a', step_times=[0.1, 0.101, 0.099,
                                                            0.1, 0.1]))
  write_record(tmp_path, make_record(label='b', step_times=slow_steps))
  code, out, _ = _run(['--result_dir', tmp_path, '--baseline', 'a',
                       '--candidate', 'b', '--by', 'label'], capsys)
  assert code == compare.EXIT_NO_REGRESSION, out
  cells = _cells(out, 'trivial')
  assert cells['verdict'] == 'inconclusive' and cells['test'] == 'none'
  assert cells['p'] == 'n/a' and cells['HL change'] == 'n/a'
  # No spread to plan by: the fewest runs with which the test can decide.
  assert ('inconclusive: 4 runs a side needed (the fewest with which the '
          'unpaired test can reach p < 0.05)' in cells['note']), cells
  assert 'per-step medians 320.0 -> 288.' in cells['note']
  assert '(-9.9%), a description of these processes only' in cells['note']
  # With several runs on the other side their spread says how many.
  rng = np.random.default_rng(3)
  write_runs(tmp_path, 320 * (1 + rng.normal(0, 0.03, 5)), rng, label='a')
  code, out, _ = _run(['--result_dir', tmp_path, '--baseline', 'a',
                       '--candidate', 'b'], capsys)
  assert code == compare.EXIT_NO_REGRESSION, out
  (row,) = _comparison(tmp_path, 'a', 'b').rows
  assert row.verdict == stats.INCONCLUSIVE and row.result is None
  assert row.runs_needed == stats.runs_for_change(row.spread, 5.0, False)
  assert row.runs_needed > 4
  assert ('inconclusive: %d runs a side needed (to catch 5%%, from the '
          'spread observed)' % row.runs_needed) in _cells(out, 'trivial')[
              'note']


def _comparison(folder, baseline, candidate, by='label'):
  return comparison_lib.compare_groups(store.load_runs(folder), by, baseline,
                                       candidate)


def test_interleaved_pairs_are_judged_by_the_paired_test(tmp_path, capsys):
  """Each round's runs drift together (a machine that gets busier), so the
  3% slowdown hides from Mann-Whitney; the runner's rounds pair the runs
  and the paired test finds it."""
  rng = np.random.default_rng(27)
  drift = np.exp(rng.normal(0.0, 0.05, 10))
  plan = uuid.uuid4().hex
  write_runs(tmp_path / 'runs', 1000 * drift, rng, label='A', plan=plan)
  write_runs(tmp_path / 'runs', 970 * drift * (1 + rng.normal(0, 0.003, 10)),
             rng, label='B', plan=plan)
  code, out, _ = _run(['--result_dir', tmp_path / 'runs', '--baseline', 'A',
                       '--candidate', 'B'], capsys)
  assert code == compare.EXIT_REGRESSION, out
  cells = _cells(out, 'trivial')
  assert cells['test'] == 'paired Wilcoxon' and cells['verdict'] == (
      '**regression**')
  assert cells['runs for 5%'].endswith(' pairs')
  (row,) = _comparison(tmp_path / 'runs', 'A', 'B').rows
  assert -4 < row.result.change_pct < -2 and row.paired
  # The same runs without their rounds: the unpaired test, which the drift
  # defeats.
  for path in store.find_record_files(str(tmp_path / 'runs')):
    record = json.loads(open(path).read())
    del record['sequence']
    write_record(tmp_path / 'unpaired', record)
  (row,) = _comparison(tmp_path / 'unpaired', 'A', 'B').rows
  assert row.test == stats.UNPAIRED_TEST and row.verdict == stats.NO_CHANGE
  # A run without its partner (a failed run): no patching, unpaired, and
  # the note says why.
  write_runs(tmp_path / 'runs', [1000.0], rng, label='A',
             plan=uuid.uuid4().hex)
  (row,) = _comparison(tmp_path / 'runs', 'A', 'B').rows
  assert row.test == stats.UNPAIRED_TEST
  assert ("1 run(s) without a partner in the other side's rounds: judged "
          'unpaired') in row.note


def test_json_output_names_the_test_and_both_p_values(two_versions,
                                                      tmp_path_factory, capsys):
  output = tmp_path_factory.mktemp('report') / 'compare.json'
  code, out, _ = _run(['--result_dir', two_versions, '--baseline', '2.20.0',
                       '--candidate', '2.21.0', '--output', output], capsys)
  assert code == compare.EXIT_REGRESSION and 'wrote' in out
  data = json.loads(output.read_text())
  assert data['family_adjustment'] == 'Holm' and data['has_regression']
  rows = {row['config']['model']: row for row in data['rows']}
  trivial = rows['trivial']
  assert trivial['test'] == 'Mann-Whitney' and trivial['verdict'] == (
      'regression')
  # Two configurations judged: Holm doubles the smaller p.
  assert trivial['p_adjusted'] == pytest.approx(
      min(1.0, 2 * trivial['p_value']))
  assert trivial['detectable_slowdown_pct'] > 0 and trivial['runs_for_5pct']
  assert rows['lenet']['test'] == 'missing' and rows['lenet']['p_value'] is None
  code, out, _ = _run(['--result_dir', two_versions, '--baseline', '2.20.0',
                       '--candidate', '2.21.0', '--format', 'json'], capsys)
  assert json.loads(out)['rows'] == data['rows']


def test_the_exit_code_follows_the_verdicts_after_holm(tmp_path, capsys):
  """Three configurations, one 7% slower at 4 runs a side: p = 2/70 =
  0.029 alone, 0.086 after Holm over three, and no 4 runs could do better:
  inconclusive, exit 0. Alone, the same runs are a regression."""
  rng = np.random.default_rng(5)
  for model, candidate_speed in (('trivial', 0.93), ('lenet', 1.0),
                                 ('resnet50', 1.0)):
    write_runs(tmp_path, 1000 * (1 + rng.normal(0, 0.005, 4)), rng,
               label='A', model=model)
    write_runs(tmp_path, 1000 * candidate_speed * (
        1 + rng.normal(0, 0.005, 4)), rng, label='B', model=model)
  code, out, _ = _run(['--result_dir', tmp_path, '--baseline', 'A',
                       '--candidate', 'B'], capsys)
  assert code == compare.EXIT_NO_REGRESSION, out
  cells = _cells(out, 'trivial')
  assert (cells['p'], cells['p Holm']) == ('0.029', '0.086')
  assert cells['verdict'] == 'inconclusive'
  assert ("these runs cannot reach p < 0.05 after Holm's adjustment; "
          'inconclusive: ') in cells['note']
  alone = tmp_path / 'alone'
  for path in store.find_record_files(str(tmp_path)):
    record = json.loads(open(path).read())
    if record['config']['model'] == 'trivial':
      write_record(alone, record)
  code, out, _ = _run(['--result_dir', alone, '--baseline', 'A',
                       '--candidate', 'B'], capsys)
  assert code == compare.EXIT_REGRESSION, out


def _cluster_run(folder, ips, workers=2, **record_args):
  """One cluster run: a ps record and `workers` worker records sharing a
  cluster_run_id, each worker estimating the cluster's images/sec."""
  cluster_id = uuid.uuid4().hex
  for task in range(workers):
    record = make_record(step_times=[32 * workers / ips] * 10,
                         num_workers=workers, num_ps=1, job_name='worker',
                         task_index=task, **record_args)
    record['cluster_run_id'] = cluster_id
    write_record(folder, record)
  ps = make_record(num_workers=workers, num_ps=1, job_name='ps', task_index=0,
                   **record_args)
  ps['cluster_run_id'] = cluster_id
  ps['summary']['images_per_sec'] = None
  write_record(folder, ps)


def test_a_cluster_run_counts_once(tmp_path, capsys):
  """Three cluster runs a side, two workers each, the candidate 10% slower.
  As three runs a side no test can decide (inconclusive, exit 0); counted
  per worker they would pass for six a side and a regression."""
  for ips in (2000.0, 2010.0, 1990.0):
    _cluster_run(tmp_path, ips, label='A')
  for ips in (1800.0, 1810.0, 1790.0):
    _cluster_run(tmp_path, ips, label='B')
  runs = comparison_lib.usable_runs(store.load_runs(tmp_path))
  assert len(runs) == 6
  assert sorted(round(r['summary.images_per_sec']) for r in runs) == [
      1790, 1800, 1810, 1990, 2000, 2010]
  code, out, _ = _run(['--result_dir', tmp_path, '--baseline', 'A',
                       '--candidate', 'B'], capsys)
  assert code == compare.EXIT_NO_REGRESSION, out
  cells = _cells(out, 'trivial')
  assert cells['baseline img/s (n)'] == '2000.0 (3)', cells
  assert cells['verdict'] == 'inconclusive'


def test_detectable_comes_from_the_spread_observed(tmp_path, capsys):
  rng = np.random.default_rng(8)
  write_runs(tmp_path, 1000 * (1 + rng.normal(0, 0.01, 10)), rng, label='A')
  write_runs(tmp_path, 1000 * (1 + rng.normal(0, 0.01, 10)), rng, label='B')
  comparison = _comparison(tmp_path, 'A', 'B')
  (row,) = comparison.rows
  assert row.spread == pytest.approx(0.01, rel=0.4)
  assert row.detectable_pct == pytest.approx(
      stats.detectable_slowdown_pct(row.spread, 10, 10, False))
  assert 0.5 < row.detectable_pct < 3
  assert row.runs_needed == stats.runs_for_change(row.spread, 5.0, False)
  code, out, _ = _run(['--result_dir', tmp_path, '--baseline', 'A',
                       '--candidate', 'B'], capsys)
  cells = _cells(out, 'trivial')
  assert cells['detectable'] == '%.1f%%' % row.detectable_pct
  assert cells['runs for 5%'] == str(row.runs_needed)
  assert 'with 80% power at p < 0.05' in out
  assert not math.isnan(row.detectable_pct)


@pytest.mark.parametrize('argv, message', [
    (['--result_dir', '{d}/nowhere', '--baseline', 'a', '--candidate', 'b'],
     'does not exist'),
    (['--result_dir', '{d}', '--baseline', '2.20.0', '--candidate', '9.9'],
     'neither labels nor TF versions'),
    (['--result_dir', '{d}', '--by', 'tf_version', '--baseline', '2.20.0',
      '--candidate', '9.9'], "candidate group '9.9' has no successful runs"),
    (['--result_dir', '{d}'], 'nothing to compare'),
    (['--result_dir', '{d}', '--baseline', 'a'], 'give both'),
    (['--result_dir', '{d}/empty', '--baseline', 'a', '--candidate', 'b'],
     'no run records'),
])
def test_bad_input_exits_2_with_a_paragraph(two_versions, capsys, argv,
                                            message):
  (two_versions / 'empty').mkdir()
  argv = [a.replace('{d}', str(two_versions)) for a in argv]
  code, _, err = _run(argv, capsys)
  assert code == 2
  assert err.startswith('error: ') and message in err.replace('\n', ' ')


def test_unknown_option_is_usage_error(capsys):
  assert compare.main(['compare', '--bogus']) == 2


def test_reachable_through_the_tf_cnn_benchmarks_command(two_versions, capsys):
  from tf_cnn_benchmarks import cli
  code = cli.main(['tf_cnn_benchmarks', 'compare', '--result_dir',
                   str(two_versions), '--baseline', '2.20.0', '--candidate',
                   '2.21.0'])
  assert code == 1 and '**regression**' in capsys.readouterr().out


def test_sync_updates_keys_runs_and_old_records_match_the_default(tmp_path,
                                                                  capsys):
  """--sync_updates=barrier is another configuration than the default
  (mean); a record from before the field existed is a `mean` run."""
  rng = np.random.default_rng(7)
  cluster = dict(num_workers=2, num_ps=1)
  write_runs(tmp_path / 'old', [1000.0, 1001.0, 999.0], rng, **cluster)
  write_runs(tmp_path / 'old', [1500.0, 1501.0, 1499.0], rng,
             sync_updates='barrier', **cluster)
  write_runs(tmp_path / 'new', [1000.5, 1001.5, 999.5], rng,
             sync_updates='mean', **cluster)
  write_runs(tmp_path / 'new', [1500.5, 1501.5, 1499.5], rng,
             sync_updates='barrier', **cluster)
  code, out, _ = _run([tmp_path / 'old', tmp_path / 'new'], capsys)
  assert code == 0
  rows = [l for l in out.splitlines() if l.startswith('| trivial')]
  assert len(rows) == 2, out
  assert not any('regression' in row for row in rows), out
  assert [row.split('|')[2].strip() for row in rows] == ['barrier', 'mean']


def test_medians_and_hodges_lehmann_disagreeing_is_explained(tmp_path,
                                                             capsys):
  """The user's report: medians fell 2.1% while the change said +2.6%.
  Both are shown, named, and the row says why they part."""
  rng = np.random.default_rng(1)
  write_runs(tmp_path, [880.0, 885.0, 924.2, 926.0, 928.0], rng, label='A',
             model='lenet')
  write_runs(tmp_path, [903.0, 904.0, 905.1, 960.0, 965.0], rng, label='B',
             model='lenet')
  code, out, _ = _run(['--result_dir', tmp_path, '--baseline', 'A',
                       '--candidate', 'B'], capsys)
  assert code == 0
  header = next(l for l in out.splitlines() if l.startswith('| model'))
  assert '| medians | HL change |' in header
  (row,) = [l for l in out.splitlines() if l.startswith('| lenet')]
  cells = [c.strip() for c in row.split('|')]
  assert cells[4:6] == ['-2.1%', '+2.6%'], row
  assert 'medians -2.1% but HL +2.6%' in row and '25 candidate/baseline' in row
  assert 'Hodges-Lehmann' in out and 'median of candidate/baseline over ' \
      'every pair of runs' in out


def test_runs_without_a_throughput_are_left_out(tmp_path, capsys):
  rng = np.random.default_rng(2)
  write_runs(tmp_path, [1000.0, 1001.0, 999.0], rng, label='A')
  write_runs(tmp_path, [1000.0, 1001.0, 999.0], rng, label='B')
  write_record(tmp_path, make_record(label='B', status='interrupted'))
  code, out, _ = _run(['--result_dir', tmp_path, '--baseline', 'A',
                       '--candidate', 'B'], capsys)
  assert code == 0 and '(3)' in out and '(4)' not in out


def test_by_engine_puts_the_same_configuration_side_by_side(tmp_path, capsys):
  """--by engine pairs each configuration's graph runs (a record without
  the field is one) with its tf2 runs; by label, engines stay apart."""
  rng = np.random.default_rng(11)
  write_runs(tmp_path, [100.0, 101.0, 99.0], rng, label='a')  # no field
  write_runs(tmp_path, [100.5, 100.0], rng, engine='graph', label='a')
  write_runs(tmp_path, [80.0, 80.5, 79.5], rng, engine='tf2', label='b')
  code, out, _ = _run(['--result_dir', tmp_path, '--by', 'engine',
                       '--baseline', 'graph', '--candidate', 'tf2'], capsys)
  assert code == compare.EXIT_REGRESSION, out
  rows = [l for l in out.splitlines() if l.startswith('| trivial')]
  assert len(rows) == 1 and '**regression**' in rows[0], out
  assert '(5)' in rows[0] and '(3)' in rows[0], rows[0]
  # By label the engine keys the configuration: nothing pairs up.
  code, out, _ = _run(['--result_dir', tmp_path, '--by', 'label',
                       '--baseline', 'a', '--candidate', 'b'], capsys)
  rows = [l for l in out.splitlines() if l.startswith('| trivial')]
  assert len(rows) == 2 and all('missing' in row for row in rows), out
