"""Memory in every run: the process's peak RSS (and each GPU's peak) in the
report's closing lines and the record; an out-of-memory failure says where,
how much was asked for, the peak so far and a smaller batch."""

import json
import os
import resource
import subprocess
import sys
import types

import pytest
import tensorflow as tf

from tests import driver_helpers
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.engine_tf2 import engine as tf2_engine
from tf_cnn_benchmarks.measure import memory
from tf_cnn_benchmarks.run import report


def _check_run(result, text):
  assert result.status == 'ok', text
  lines = text.splitlines()
  (line,) = [l for l in lines if l.startswith('Peak memory: ')]
  # After the total, among the closing lines.
  assert lines.index(line) > lines.index('total images/sec: %.2f' %
                                         result.images_per_sec)
  summary = result.record['summary']
  # A TensorFlow process holds far more than 50 MiB.
  assert summary['peak_rss_mb'] > 50
  assert '%.1f MiB host (peak RSS)' % summary['peak_rss_mb'] in line or (
      'GiB host' in line)
  assert summary['peak_device_memory_mb'] is None  # no GPU here


def test_graph_engine_reports_and_records_peak_memory():
  _check_run(*driver_helpers.run_quietly(model='trivial'))


def test_tf2_engine_reports_and_records_peak_memory():
  import io  # pylint: disable=g-import-not-at-top
  out = io.StringIO()
  result = tf2_engine.run(flags.make_params(
      model='trivial', engine='tf2', device='cpu', num_batches=2,
      num_warmup_batches=1, result_dir=''), reporter=report.Reporter(out))
  _check_run(result, out.getvalue())


def test_each_gpus_peak_is_tensorflows(monkeypatch):
  gpus = [tf.config.PhysicalDevice('/physical_device:GPU:%d' % i, 'GPU')
          for i in range(2)]
  logical = [tf.config.LogicalDevice('/job:localhost/replica:0/task:0/'
                                     'device:GPU:%d' % i, 'GPU')
             for i in range(2)]
  real_physical = tf.config.list_physical_devices
  monkeypatch.setattr(tf.config, 'list_physical_devices', lambda kind=None: (
      gpus if kind == 'GPU' else real_physical(kind)))
  monkeypatch.setattr(tf.config, 'list_logical_devices',
                      lambda kind=None: logical)
  peaks = {'GPU:0': 3 << 30, 'GPU:1': 5 << 29}
  monkeypatch.setattr(tf.config.experimental, 'get_memory_info',
                      lambda name: {'current': 0, 'peak': peaks[name]})
  measured = memory.measure()
  assert measured.device_peak_bytes == peaks
  assert measured.record_fields()['peak_device_memory_mb'] == {
      'GPU:0': 3072.0, 'GPU:1': 2560.0}
  assert measured.line().endswith(
      'host (peak RSS), 3.00 GiB on GPU:0 (TensorFlow\'s peak), 2.50 GiB on '
      'GPU:1 (TensorFlow\'s peak)')
  assert memory.peak_on('GPU:1') == 5 << 29


def test_a_gpu_out_of_memory_names_device_request_and_peak():
  rc = types.SimpleNamespace(batch_size_per_device=64,
                             model=types.SimpleNamespace(image_size=224,
                                                         reads_ids=False))
  message = ('OOM when allocating tensor with shape[64,256,56,56] and type '
             'half on /job:localhost/replica:0/task:0/device:GPU:3 by '
             'allocator GPU_3_bfc')
  asked = []

  def peak_on(device):
    asked.append(device)
    return 15 << 30
  hint = failures.oom_hint(rc, message, peak_on)
  assert asked == ['GPU:3']
  assert hint == ('Out of memory on GPU:3: TensorFlow asked for 98.0 MiB '
                  'more (shape [64,256,56,56], half) with 64 images per '
                  'device of 224x224; TensorFlow\'s peak so far on GPU:3 was '
                  '15.00 GiB; try --batch_size=32.')


@pytest.mark.slow
def test_a_real_out_of_memory_on_this_cpu(tmp_path):
  """The process's address space capped at 8 GiB, a batch whose synthetic
  images alone need 11.5 GiB: TensorFlow's allocator fails, and the run
  says so (exit 1, the record's failure hint)."""
  def cap():
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
  env = dict(os.environ)
  env.pop('TF_CPP_MIN_LOG_LEVEL', None)
  out = subprocess.run(
      [sys.executable, driver_helpers.SCRIPT, '--model=trivial',
       '--device=cpu', '--batch_size=20000', '--num_batches=1',
       '--num_warmup_batches=0', '--result_dir=%s' % tmp_path],
      cwd=driver_helpers.REPO, capture_output=True, text=True, timeout=600,
      env=env, preexec_fn=cap)
  assert out.returncode == 1, out.stdout + out.stderr
  (name,) = os.listdir(tmp_path)
  record = json.loads((tmp_path / name).read_text())
  hint = record['failure']['hint']
  assert hint.startswith('Out of memory on CPU:0: TensorFlow asked for '
                         '11.52 GiB more (shape [20000,227,227,3], float)')
  assert 'this process\'s peak RSS so far was' in hint
  assert hint.endswith('try --batch_size=10000.')
  assert 'Hint: ' + hint in out.stdout
  assert record['summary']['peak_rss_mb'] > 50
  assert 'Peak memory: ' in out.stdout
