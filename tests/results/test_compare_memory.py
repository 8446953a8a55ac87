"""`compare --metric peak_rss_mb`: the runs' peak host memory, where a rise
is the regression."""

import numpy as np

from results import compare
from tests.results.record_factory import (compare_versions, make_record,
                                          trivial_row, write_record)


def _write(folder, version, memory_mib, rng):
  for mib in memory_mib:
    record = make_record(tf_version=version,
                         step_times=0.1 * rng.normal(1.0, 0.01, 10))
    record['summary']['peak_rss_mb'] = float(mib)
    write_record(folder, record)


def _two_versions(folder, candidate_mib):
  """8 runs a side: 1000 MiB on 2.20.0, candidate_mib on 2.21.0 (1% noise),
  the same throughput."""
  rng = np.random.default_rng(3)
  for version, mib in (('2.20.0', 1000), ('2.21.0', candidate_mib)):
    _write(folder, version, mib * rng.normal(1.0, 0.01, 8), rng)



def test_more_memory_is_the_regression(tmp_path, capsys):
  _two_versions(tmp_path, 1200)
  code, out = compare_versions(tmp_path, capsys, '--metric', 'peak_rss_mb')
  assert code == compare.EXIT_REGRESSION
  assert 'baseline peak RSS MiB (n)' in out
  (row,) = [l for l in out.splitlines() if l.startswith('| trivial')]
  assert '**regression**' in row and '+20.' in row
  # The same runs' throughput did not change.
  code, out = compare_versions(tmp_path, capsys)
  assert code == compare.EXIT_NO_REGRESSION and 'baseline img/s' in out


def test_less_memory_is_an_improvement(tmp_path, capsys):
  _two_versions(tmp_path, 800)
  code, out = compare_versions(tmp_path, capsys, '--metric', 'peak_rss_mb')
  assert code == compare.EXIT_NO_REGRESSION
  assert 'improvement' in out
