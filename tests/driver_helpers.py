"""Shared helpers for tests that run the benchmark in-process or as a CLI."""

import io
import os
import subprocess
import sys

from tf_cnn_benchmarks import driver
from tf_cnn_benchmarks import flags
from tf_cnn_benchmarks import report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, 'tf_cnn_benchmarks.py')


def run_quietly(**overrides):
  """driver.run with defaults for a fast CPU test; returns (result, text)."""
  settings = dict(device='cpu', num_batches=3, num_warmup_batches=1,
                  result_dir='', display_every=1)
  settings.update(overrides)
  out = io.StringIO()
  result = driver.run(flags.make_params(**settings),
                      reporter=report.Reporter(out))
  return result, out.getvalue()


def run_cli(*args, timeout=300, **popen_kw):
  # The harness quiets TensorFlow itself (--verbosity); don't help it.
  env = dict(os.environ)
  env.pop('TF_CPP_MIN_LOG_LEVEL', None)
  return subprocess.run([sys.executable, SCRIPT] + list(args), cwd=REPO,
                        capture_output=True, text=True, timeout=timeout,
                        env=env, **popen_kw)
