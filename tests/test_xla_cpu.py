"""--xla_compile really compiles on the CPU (TensorFlow ignores the jit level
for CPU ops unless told otherwise) and trains like the plain graph."""

import collections
import json

import pytest

from tests.driver_helpers import run_cli


def _run(tmp_path, name, *flags):
  trace = tmp_path / (name + '.trace.json')
  out = run_cli('--model=trivial', '--data_name=cifar10', '--device=cpu',
                '--num_batches=3', '--num_warmup_batches=1',
                '--init_learning_rate=0.0001', '--peak_gflops=1',
                '--result_dir=%s' % (tmp_path / name),
                '--trace_file=%s' % trace, *flags)
  assert out.returncode == 0, out.stderr
  events = json.loads(trace.read_text())['traceEvents']
  ops = collections.Counter(e.get('args', {}).get('op', e.get('name'))
                            for e in events if e.get('ph') == 'X')
  (record,) = (tmp_path / name).glob('*.json')
  return ops, json.loads(record.read_text())['timing']['step_losses']


def test_xla_compile_clusters_on_cpu_and_matches(tmp_path):
  plain_ops, plain_losses = _run(tmp_path, 'plain')
  xla_ops, xla_losses = _run(tmp_path, 'xla', '--xla_compile')
  assert not [op for op in plain_ops if 'Xla' in op]
  assert xla_ops['_XlaRun'] >= 1
  assert xla_losses == pytest.approx(plain_losses, rel=1e-3)
