"""--model=ncf through the driver: synthetic ids, variable modes, no real data.

Small batches keep each run to seconds; the tables are MovieLens-20M sized
whatever the batch (about 127 MB of float32 per copy).
"""

import math

import numpy as np

from tests.driver_helpers import run_cli, run_quietly
from tf_cnn_benchmarks import exit_codes


def test_ncf_trains_on_synthetic_ids():
  result, text = run_quietly(model='ncf', batch_size=8, num_batches=3,
                             num_warmup_batches=0, init_learning_rate=0.05)
  assert result.status == 'ok', result.failure
  assert 'Dataset:     ids (synthetic)' in text
  losses = result.times.losses
  assert len(losses) == 3 and all(math.isfinite(l) for l in losses)
  # A two-class loss starts near log(2)-ish, and training moves it.
  assert 0.1 < losses[0] < 3 and losses[0] != losses[-1]


def test_ncf_replicated_matches_parameter_server():
  # weight_decay=0 keeps the embedding gradients sparse (IndexedSlices):
  # an L2 term would make them dense and skip the path worth testing.
  common = dict(model='ncf', num_gpus=2, batch_size=8, num_batches=4,
                num_warmup_batches=0, optimizer='momentum',
                init_learning_rate=0.05, weight_decay=0.0)
  ps, _ = run_quietly(variable_update='parameter_server', **common)
  rep, _ = run_quietly(variable_update='replicated', **common)
  assert ps.status == rep.status == 'ok', (ps.failure, rep.failure)
  np.testing.assert_allclose(ps.times.losses, rep.times.losses, rtol=1e-5)
  assert ps.times.losses[0] != ps.times.losses[-1]


def test_ncf_with_real_data_is_a_one_line_usage_error(tmp_path):
  # The original ran ncf on synthetic ids only; a --data_dir cannot feed it.
  out = run_cli('--model=ncf', '--device=cpu', '--data_dir=%s' % tmp_path)
  assert out.returncode == exit_codes.USAGE, out.stderr
  lines = out.stderr.strip().splitlines()
  assert len(lines) == 1, lines
  assert lines[0].startswith('Error: --model=ncf reads user and item ids')
  assert 'synthetic' in lines[0]
