"""The test-only injected slowdown: a run slowed by a known amount, said so in
its record, and kept apart from real runs by `compare`."""

import json
import os
import re

import numpy as np
import pytest

from results import compare
from tests.driver_helpers import run_cli
from tests.results.record_factory import write_runs
from tf_cnn_benchmarks.test_hooks import injected_slowdown
from tf_cnn_benchmarks.config.usage_errors import UsageError

ENV_VAR = injected_slowdown.ENV_VAR


def test_the_variable_is_read_and_bad_values_refused():
  assert injected_slowdown.from_environment({}) is None
  assert injected_slowdown.from_environment({ENV_VAR: ' '}) is None
  assert injected_slowdown.from_environment({ENV_VAR: '0'}) is None
  assert injected_slowdown.from_environment({ENV_VAR: '0.05'}) == 0.05
  for bad in ('5%', 'nan', '-0.1', '11'):
    with pytest.raises(UsageError, match=ENV_VAR):
      injected_slowdown.from_environment({ENV_VAR: bad})


def test_a_slowed_run_is_slower_by_its_own_total_and_says_so(tmp_path):
  """The idle time is inside the timed loop's clock: the printed `total
  images/sec` is that of a loop at least (1 + f) times the steps' own time,
  which a real run (wall time ~ the steps' time) cannot reach."""
  fraction = 1.0
  env = dict(os.environ, **{ENV_VAR: str(fraction)})
  env.pop('TF_CPP_MIN_LOG_LEVEL', None)
  out = run_cli('--model=lenet', '--device=cpu', '--batch_size=16',
                '--num_batches=12', '--num_warmup_batches=1',
                '--display_every=100', '--result_dir=%s' % tmp_path, env=env)
  assert out.returncode == 0, out.stderr
  (name,) = [n for n in os.listdir(tmp_path) if n.endswith('.json')]
  rec = json.loads((tmp_path / name).read_text())
  assert rec['injected_slowdown'] == fraction
  steps = rec['timing']['step_times_sec']
  wall = rec['timing']['timed_wall_time_sec']
  assert wall >= (1 + fraction) * sum(steps)
  printed = float(re.search(r'total images/sec: ([\d.]+)',
                            out.stdout).group(1))
  assert rec['summary']['images_per_sec'] == pytest.approx(printed, abs=0.01)
  # Compute alone would give images / sum(steps); the total shows the idle.
  compute_rate = len(steps) * 16 / sum(steps)
  assert printed <= compute_rate / (1 + fraction) * 1.001
  # Step times stay the steps' own: the median rate is the compute rate.
  assert rec['summary']['images_per_sec_mean_of_steps'] == pytest.approx(
      compute_rate, rel=1e-6)


def test_a_bad_value_is_a_usage_error_before_tensorflow_loads(tmp_path):
  env = dict(os.environ, **{ENV_VAR: 'five'})
  out = run_cli('--model=trivial', '--result_dir=%s' % tmp_path, env=env,
                timeout=60)
  assert out.returncode == 2
  assert ENV_VAR in out.stderr and 'fraction' in out.stderr
  assert not os.listdir(tmp_path)


def _write_slowed_runs(folder, rng):
  write_runs(folder, [1000.0, 1001.0, 999.0, 1002.0, 998.0], rng, label='A')
  paths = write_runs(folder, [950.0, 951.0, 949.0, 952.0, 948.0], rng,
                     label='B')
  for path in paths:
    with open(path) as record_file:
      record = json.load(record_file)
    record['injected_slowdown'] = 0.05
    with open(path, 'w') as record_file:
      json.dump(record, record_file)


def test_compare_refuses_slowed_runs_unless_asked(tmp_path, capsys):
  _write_slowed_runs(tmp_path, np.random.default_rng(4))
  argv = ['compare', '--result_dir', str(tmp_path), '--baseline', 'A',
          '--candidate', 'B']
  assert compare.main(argv) == 2
  err = capsys.readouterr().err
  assert '5 of the 10 runs' in err and '--allow_injected_slowdown' in err
  assert compare.main(argv + ['--allow_injected_slowdown']) == 1
  out = capsys.readouterr().out
  assert 'candidate: 5 of 5 runs slowed on purpose by 5% (test-only)' in out
