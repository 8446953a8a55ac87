"""`compare --metric epochs_to_target / time_to_target_sec`: convergence
runs judged with the same statistics as speed; more epochs (or seconds) to
the target is the regression, and a run that never reached it is left
out. `--drop_extremes` is MLPerf's rule: each side's best and worst run
dropped first."""

import numpy as np

from results import compare
from tests.results.record_factory import (compare_versions, make_record,
                                          trivial_row, write_record)


def _write(folder, version, epochs, rng, reached=True):
  for value in epochs:
    record = make_record(tf_version=version,
                         step_times=0.1 * rng.normal(1.0, 0.01, 10))
    summary = record['summary']
    summary['target_top_1_accuracy'] = 0.8
    summary['epochs_to_target'] = float(value) if reached else None
    summary['time_to_target_sec'] = 10.0 * value if reached else None
    if not reached:
      record['status'] = 'target_not_reached'
    write_record(folder, record)




def test_more_epochs_to_the_target_is_the_regression(tmp_path, capsys):
  """8 runs a side: ~6 epochs to the target on 2.20.0, ~9 on 2.21.0, the
  same speed; two 2.21.0 runs never reached it (left out, not zeros)."""
  rng = np.random.default_rng(30)
  _write(tmp_path, '2.20.0', rng.normal(6, 0.5, 8), rng)
  _write(tmp_path, '2.21.0', rng.normal(9, 0.5, 8), rng)
  _write(tmp_path, '2.21.0', [1, 1], rng, reached=False)
  for metric, unit in (('epochs_to_target', 'epochs to target'),
                       ('time_to_target_sec', 's to target')):
    code, out = compare_versions(tmp_path, capsys, '--metric', metric)
    assert code == compare.EXIT_REGRESSION, out
    assert 'baseline %s (n)' % unit in out
    row = trivial_row(out)
    assert '**regression**' in row and '(8)' in row, row
  code, out = compare_versions(tmp_path, capsys)  # speed did not change
  assert code == compare.EXIT_NO_REGRESSION, out


def test_the_same_convergence_is_no_change(tmp_path, capsys):
  rng = np.random.default_rng(31)
  for version in ('2.20.0', '2.21.0'):
    _write(tmp_path, version, rng.normal(6, 0.3, 8), rng)
  code, out = compare_versions(tmp_path, capsys, '--metric', 'epochs_to_target')
  assert code == compare.EXIT_NO_REGRESSION, out
  assert 'regression' not in trivial_row(out)


def test_drop_extremes_leaves_out_each_sides_best_and_worst(tmp_path,
                                                           capsys):
  """One wild run a side would widen the spread; MLPerf's rule drops it
  (and the best) before the test: 7 runs become 5."""
  rng = np.random.default_rng(32)
  _write(tmp_path, '2.20.0', list(rng.normal(6, 0.2, 6)) + [30], rng)
  _write(tmp_path, '2.21.0', list(rng.normal(6, 0.2, 6)) + [1], rng)
  code, out = compare_versions(tmp_path, capsys, '--metric', 'epochs_to_target',
                       '--drop_extremes')
  assert code == compare.EXIT_NO_REGRESSION, out
  assert trivial_row(out).count('(5)') == 2, trivial_row(out)
