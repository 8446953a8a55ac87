"""`compare --metric cpu_seconds_per_image`: the process's own CPU time per
image, where a rise is the regression. It is blind to contention: a run
slowed by other processes sharing the machine loses images/sec but not
CPU time per image, so the two metrics tell a slower program from a busier
machine."""

import uuid

import numpy as np

from results import compare
from tests.results.record_factory import (compare_versions, make_record,
                                          trivial_row, write_record)


def _write(folder, version, step_scale, cpu_scale, rng):
  """8 runs: step times and CPU seconds per image scaled (1% noise)."""
  for _ in range(8):
    record = make_record(tf_version=version, step_times=0.1 * step_scale *
                         rng.normal(1.0, 0.01, 10))
    record['summary']['cpu_seconds_per_image'] = float(
        0.002 * cpu_scale * rng.normal(1.0, 0.01))
    write_record(folder, record)


def test_interleaved_runs_are_judged_by_the_same_paired_test(tmp_path, capsys):
  """The runner's rounds pair CPU time per image as they pair images/sec:
  each round's cost drifts alike on both sides, so a 3% rise hides from
  Mann-Whitney and the paired Wilcoxon finds it."""
  rng = np.random.default_rng(11)
  drift = np.exp(rng.normal(0.0, 0.05, 10))
  plan = uuid.uuid4().hex
  for version, scale in (('2.20.0', 1.0), ('2.21.0', 1.03)):
    for round_index, cost in enumerate(drift, 1):
      record = make_record(tf_version=version, step_times=[0.1] * 10)
      record['summary']['cpu_seconds_per_image'] = float(
          0.002 * scale * cost * rng.normal(1.0, 0.003))
      record['sequence'] = {'plan': plan, 'round': round_index,
                            'position': round_index, 'config': 'c'}
      write_record(tmp_path / 'paired', record)
      del record['sequence']
      write_record(tmp_path / 'unpaired', record)
  code, out = compare_versions(tmp_path / 'paired', capsys, '--metric',
                               'cpu_seconds_per_image')
  assert code == compare.EXIT_REGRESSION, out
  assert '| paired Wilcoxon |' in trivial_row(out), out
  code, out = compare_versions(tmp_path / 'unpaired', capsys, '--metric',
                               'cpu_seconds_per_image')
  assert code == compare.EXIT_NO_REGRESSION, out
  assert '| Mann-Whitney |' in trivial_row(out), out


def test_more_cpu_per_image_is_the_regression(tmp_path, capsys):
  rng = np.random.default_rng(5)
  _write(tmp_path, '2.20.0', 1.0, 1.0, rng)
  _write(tmp_path, '2.21.0', 1.1, 1.1, rng)  # a slower program
  code, out = compare_versions(tmp_path, capsys, '--metric', 'cpu_seconds_per_image')
  assert code == compare.EXIT_REGRESSION, out
  assert 'baseline CPU s/image (n)' in out
  assert '**regression**' in trivial_row(out) and '+10.' in trivial_row(out), out


def test_a_busier_machine_slows_throughput_but_not_cpu_per_image(
    tmp_path, capsys):
  rng = np.random.default_rng(6)
  _write(tmp_path, '2.20.0', 1.0, 1.0, rng)
  _write(tmp_path, '2.21.0', 1.1, 1.0, rng)  # same work, less of the CPU
  code, out = compare_versions(tmp_path, capsys)
  assert code == compare.EXIT_REGRESSION, out
  code, out = compare_versions(tmp_path, capsys, '--metric', 'cpu_seconds_per_image')
  assert code == compare.EXIT_NO_REGRESSION, out
  assert 'no change' in trivial_row(out), out
