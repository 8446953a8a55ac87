"""Model FLOP utilisation: report line, record fields, peak cache."""

import json
import re

import pytest
import tensorflow as tf

from tests.driver_helpers import run_quietly
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.measure import peak

MFU_LINE = re.compile(
    r'^model FLOP utilisation: (\d+\.\d)% \((\d+\.\d) of (\d+\.\d) GFLOP/s '
    r'float32 peak, (\d+\.\d\d) GFLOP per image\)$')


def test_mfu_line_follows_the_total_and_matches_the_record():
  result, text = run_quietly(model='trivial', peak_gflops=200.0,
                             num_batches=4)
  assert result.status == 'ok', text
  lines = text.splitlines()
  total = [i for i, l in enumerate(lines) if l.startswith('total images/sec')]
  assert len(total) == 1
  # The original three-line block is untouched; the MFU line comes after.
  assert lines[total[0] + 1] == '-' * 64
  match = MFU_LINE.match(lines[total[0] + 2])
  assert match, lines[total[0] + 2]
  summary = result.record['summary']
  assert summary['peak_gflops_per_sec'] == 200.0
  assert summary['gflops_per_image'] > 0
  assert summary['model_gflops_per_sec'] == pytest.approx(
      summary['gflops_per_image'] * summary['worker_images_per_sec'])
  assert summary['mfu'] == pytest.approx(
      summary['model_gflops_per_sec'] / 200.0)
  assert float(match.group(1)) == pytest.approx(100 * summary['mfu'],
                                                abs=0.05)
  json.dumps(result.record)  # still plain JSON


def test_forward_only_counts_the_forward_pass():
  train, _ = run_quietly(model='trivial', peak_gflops=200.0)
  forward, _ = run_quietly(model='trivial', peak_gflops=200.0,
                           forward_only=True)
  ratio = (train.record['summary']['gflops_per_image'] /
           forward.record['summary']['gflops_per_image'])
  assert 2.5 < ratio <= 3.0


def _small_shapes(monkeypatch):
  monkeypatch.setattr(peak, 'MATMUL_SHAPE', (64, 64, 64))
  monkeypatch.setattr(peak, 'CONV_SHAPES', (dict(
      batch=2, size=8, channels=8, kernel=3, filters=8),))


def test_peak_is_measured_once_then_cached(tmp_path, monkeypatch):
  monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
  _small_shapes(monkeypatch)
  value, source = peak.peak_gflops(tf.float32)
  assert source == 'measured' and value > 0
  again, source = peak.peak_gflops(tf.float32)
  assert (again, source) == (value, 'cached')
  with open(peak.cache_path()) as f:
    entry = json.load(f)
  (key,) = entry
  assert 'dtype=float32' in key and tf.__version__ in key
  assert entry[key]['gflops'] == max(entry[key]['matmul_gflops'],
                                     entry[key]['conv2d_gflops'])
  assert entry[key]['other_processes_cpu_share'] is not None
  # Another dtype is another entry; no measuring when not allowed.
  assert peak.peak_gflops(tf.bfloat16, measure_if_missing=False) == (
      None, None)


def test_contended_peak_is_retried_and_the_best_kept(tmp_path, monkeypatch):
  monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
  fake = {'gflops': 50.0, 'other_processes_cpu_share': 0.6,
          'measured_at_unix': 0.0}
  peak.store(tf.float32, fake)
  monkeypatch.setattr(peak, 'measure', lambda dtype: dict(
      fake, gflops=80.0, other_processes_cpu_share=0.0,
      measured_at_unix=1e12))
  assert peak.peak_gflops(tf.float32) == (80.0, 'measured')
  # Clean now: used as is from then on.
  assert peak.peak_gflops(tf.float32) == (80.0, 'cached')
  # A worse re-measurement (--measure_peak) replaces it: asked for.
  monkeypatch.setattr(peak, 'measure', lambda dtype: dict(fake, gflops=60.0))
  assert peak.peak_gflops(tf.float32, remeasure=True) == (60.0, 'measured')


def test_unknown_peak_still_reports_the_flop_rate(tmp_path, monkeypatch):
  monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))

  def fail(*args, **kwargs):
    raise RuntimeError('no peak today')

  monkeypatch.setattr(peak, 'measure', fail)
  result, text = run_quietly(model='trivial')
  assert result.status == 'ok', text
  assert 'model FLOP utilisation: n/a (' in text
  assert result.record['summary']['mfu'] is None
  assert result.record['summary']['gflops_per_image'] > 0


def test_peak_flags_exclude_each_other():
  with pytest.raises(flags.UsageError, match='only one'):
    flags.make_params(peak_gflops=100.0, measure_peak=True)
