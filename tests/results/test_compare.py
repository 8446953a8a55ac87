"""`tf_cnn_benchmarks compare`: tables and exit codes."""

import numpy as np
import pytest

from results import compare
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
  assert '(8)' in lines['trivial'] and 'runs' in lines['trivial']
  assert 'Mann-Whitney' in out
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


def test_single_run_falls_back_to_steps(tmp_path, capsys):
  slow_steps = [0.1 * 1.1] * 5 + [0.1 * 1.12] * 5
  write_record(tmp_path, make_record(label='a', step_times=[0.1, 0.101, 0.099,
                                                            0.1, 0.1]))
  write_record(tmp_path, make_record(label='b', step_times=slow_steps))
  code, out, _ = _run(['--result_dir', tmp_path, '--baseline', 'a',
                       '--candidate', 'b', '--by', 'label'], capsys)
  assert code == 1
  assert '| steps |' in out and 'per-step samples used' in out


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
