"""The single-process driver: report format, modes, checkpoints, records."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.driver_helpers import REPO, SCRIPT, run_cli, run_quietly
from tf_cnn_benchmarks import exit_codes

STEP_ROW = re.compile(
    r'^(\d+)\timages/sec: (\d+\.\d) \+/- (\d+\.\d) \(jitter = (\d+\.\d)\)'
    r'\t(-?\d+\.\d{3}|nan)$')


def test_report_has_the_original_format(tmp_path):
  out = run_cli('--model=trivial', '--device=cpu', '--num_batches=20',
                '--num_warmup_batches=2', '--result_dir=%s' % tmp_path)
  assert out.returncode == 0, out.stderr
  lines = out.stdout.splitlines()
  header = {l[:13].strip(): l[13:] for l in lines[:lines.index('=' * 10)]
            if l[:13].strip()}
  assert header['Model:'] == 'trivial'
  assert re.fullmatch(r'tensorflow(-cpu|-intel)?, (CPU only|CUDA build|ROCm '
                      r'build), oneDNN (on|off)', header['TF build:'])
  assert header['Malloc:'] == (
      'glibc keeps freed memory (--tune_malloc: trim_threshold 1024 MiB, '
      'mmap_threshold 32 MiB, top_pad 64 MiB)')
  assert header['Dataset:'] == 'imagenet (synthetic)'
  assert header['Mode:'] == 'training'
  assert header['Batch size:'] == '32 global'
  assert '             32 per device' in lines
  assert header['Num batches:'] == '20'
  assert header['Devices:'] == "['/cpu:0']"
  assert header['Data format:'] == 'NHWC'
  assert header['Optimizer:'] == 'sgd'
  assert header['Variables:'] == 'parameter_server'
  assert 'Running warm up' in lines and 'Done warm up' in lines
  table = lines.index('Step\tImg/sec\ttotal_loss')
  rows = [STEP_ROW.match(l) for l in lines[table + 1:table + 4]]
  assert all(rows), lines[table + 1:table + 4]
  assert [int(r.group(1)) for r in rows] == [1, 10, 20]
  dash = '-' * 64
  end = lines.index(dash, table)
  assert re.match(r'^total images/sec: \d+\.\d\d$', lines[end + 1])
  assert lines[end + 2] == dash
  # Nothing from TensorFlow's own logging reaches the user by default.
  assert out.stderr == ''


def test_run_record_is_complete_and_consistent(tmp_path):
  out = run_cli('--model=trivial', '--device=cpu', '--num_batches=5',
                '--num_warmup_batches=1', '--result_dir=%s' % tmp_path,
                '--label=unit-test')
  assert out.returncode == 0, out.stderr
  (name,) = [n for n in os.listdir(tmp_path) if n.endswith('.json')]
  rec = json.loads((tmp_path / name).read_text())
  assert rec['schema_version'] == 2 and rec['status'] == 'ok'
  assert rec['label'] == 'unit-test'
  assert rec['config']['model'] == 'trivial'
  assert rec['config']['synthetic'] is True
  assert len(rec['timing']['step_times_sec']) == 5
  assert len(rec['timing']['warmup_step_times_sec']) == 1
  assert len(rec['timing']['step_losses']) == 5
  env = rec['environment']
  for key in ('tf_version', 'python_version', 'cpu_model', 'cpu_count',
              'hostname', 'harness_version'):
    assert env[key]
  assert env['malloc'].startswith('glibc keeps freed memory'), env['malloc']
  printed = float(re.search(r'total images/sec: ([\d.]+)',
                            out.stdout).group(1))
  assert rec['summary']['images_per_sec'] == pytest.approx(printed, abs=0.01)
  assert rec['flags']['model'] == 'trivial'
  assert os.listdir(tmp_path) == [name]  # no temporary file left behind
  # The user's umask, not mkstemp's 0600: a web server can serve it.
  umask = os.umask(0o022)
  os.umask(umask)
  assert (tmp_path / name).stat().st_mode & 0o777 == 0o666 & ~umask


def test_parameter_server_and_replicated_give_the_same_losses():
  common = dict(model='trivial', num_gpus=2, num_batches=6,
                num_warmup_batches=0, optimizer='momentum',
                init_learning_rate=0.001)
  ps, _ = run_quietly(variable_update='parameter_server', **common)
  rep, _ = run_quietly(variable_update='replicated', **common)
  spread, _ = run_quietly(variable_update='replicated',
                          all_reduce_spec='pscpu', **common)
  assert ps.status == rep.status == spread.status == 'ok'
  np.testing.assert_allclose(ps.times.losses, rep.times.losses, rtol=1e-5)
  np.testing.assert_allclose(ps.times.losses, spread.times.losses, rtol=1e-5)
  # The loss moves: the test would notice a mode that skipped updates.
  assert ps.times.losses[0] != ps.times.losses[-1]


def test_independent_towers_do_not_communicate():
  common = dict(model='trivial', num_gpus=2, num_batches=4,
                num_warmup_batches=0, init_learning_rate=0.001)
  ind, _ = run_quietly(variable_update='independent', **common)
  rep, _ = run_quietly(variable_update='replicated', **common)
  assert ind.status == 'ok'
  # Same first step (same weights, same data), then each tower follows its
  # own gradient.
  assert ind.times.losses[0] == pytest.approx(rep.times.losses[0], rel=1e-6)
  assert ind.times.losses[-1] != pytest.approx(rep.times.losses[-1],
                                               rel=1e-6)


def test_forward_only_runs_no_update():
  result, text = run_quietly(model='trivial', forward_only=True,
                             num_batches=3)
  assert result.status == 'ok'
  assert 'Mode:        forward only' in text
  assert 'Optimizer:' not in text
  assert len(set(result.times.losses)) == 1


def test_train_then_resume_then_eval(tmp_path):
  train_dir = str(tmp_path / 'train')
  first, _ = run_quietly(model='trivial', num_batches=4, train_dir=train_dir,
                         num_warmup_batches=0)
  assert first.status == 'ok' and first.checkpoint_path.endswith('-4')
  second, text = run_quietly(model='trivial', num_batches=3,
                             train_dir=train_dir, num_warmup_batches=0)
  assert 'Restored checkpoint' in text and '(global step 4)' in text
  assert second.checkpoint_path.endswith('-7')
  evaluated, text = run_quietly(model='trivial', eval=True,
                                train_dir=train_dir, num_batches=2,
                                num_warmup_batches=0)
  assert evaluated.status == 'ok', evaluated.failure
  assert re.search(r'^Accuracy @ 1 = \d\.\d{4} Accuracy @ 5 = \d\.\d{4} '
                   r'\[64 examples\]$', text, re.M)
  assert 'Mode:        evaluation' in text


def test_eval_without_checkpoint_fails_clearly(tmp_path):
  result, text = run_quietly(model='trivial', eval=True,
                             train_dir=str(tmp_path / 'empty'))
  assert result.status == 'failed'
  assert result.exit_code == exit_codes.RUN_FAILED
  assert 'No checkpoint in --train_dir' in text


def test_checkpoint_from_replicated_restores_in_parameter_server(tmp_path):
  train_dir = str(tmp_path / 'train')
  run_quietly(model='trivial', num_gpus=2, variable_update='replicated',
              num_batches=2, num_warmup_batches=0, train_dir=train_dir)
  result, text = run_quietly(model='trivial', num_batches=1,
                             variable_update='parameter_server',
                             train_dir=train_dir)
  assert result.status == 'ok' and '(global step 2)' in text


def test_print_training_accuracy_adds_columns():
  result, text = run_quietly(model='trivial', print_training_accuracy=True)
  assert result.status == 'ok'
  assert 'Step\tImg/sec\ttotal_loss\ttop_1_accuracy\ttop_5_accuracy' in text
  assert re.search(r'^1\timages/sec: .*\t\d\.\d\d\t\d\.\d\d$', text, re.M)


def test_bfloat16_on_cpu_keeps_float32_variables():
  result, text = run_quietly(model='lenet', use_fp16=True, batch_size=4)
  assert result.status == 'ok', result.failure
  assert 'Precision:   bfloat16 compute, float32 variables' in text
  assert result.record['config']['compute_dtype'] == 'bfloat16'
  assert all(np.isfinite(result.times.losses))


def test_trace_file_is_chrome_trace_json(tmp_path):
  trace = tmp_path / 'trace.json'
  result, _ = run_quietly(model='trivial', trace_file=str(trace))
  assert result.status == 'ok'
  events = json.loads(trace.read_text())['traceEvents']
  assert any(e.get('ph') == 'X' for e in events)
  # The traced step is extra: it is not among the timed steps.
  assert len(result.times.timed) == 3


def test_graph_file_is_a_text_graph_def(tmp_path):
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  path = tmp_path / 'graph.pbtxt'
  result, text = run_quietly(model='trivial', graph_file=str(path))
  assert result.status == 'ok'
  assert 'Wrote the graph to %s' % path in text
  graph_def = text_format.Parse(path.read_text(), tf.compat.v1.GraphDef())
  op_types = {node.op for node in graph_def.node}
  assert {'MatMul', 'ResourceApplyGradientDescent'} <= op_types
  assert [p.name for p in tmp_path.iterdir()] == ['graph.pbtxt']  # no temp


def test_num_epochs_sets_the_run_length():
  result, text = run_quietly(model='trivial', data_name='cifar10',
                             num_epochs=0.001, batch_size=10,
                             num_batches=None)
  # 0.001 epoch of 50,000 CIFAR-10 images at 10 per step.
  assert result.status == 'ok' and len(result.times.timed) == 5
  assert 'Num batches: 5' in text


@pytest.mark.timeout(120)
def test_sigterm_stops_cleanly_with_an_interrupted_record(tmp_path):
  proc = subprocess.Popen(
      [sys.executable, SCRIPT, '--model=trivial', '--device=cpu',
       '--num_batches=1000000', '--result_dir=%s' % tmp_path],
      cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  try:
    for line in proc.stdout:
      if line.startswith('1\timages/sec'):
        break
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
  finally:
    proc.kill()
  assert proc.returncode == exit_codes.INTERRUPTED
  assert 'Interrupted: stopped by SIGTERM' in out
  (name,) = [n for n in os.listdir(tmp_path) if n.endswith('.json')]
  rec = json.loads((tmp_path / name).read_text())
  assert rec['status'] == 'interrupted'
  assert rec['timing']['step_times_sec']
  # Its throughput is missing, not 0.0 (which would drag any mean down).
  assert rec['summary']['images_per_sec'] is None
  assert rec['summary']['worker_images_per_sec'] is None


def test_divergence_is_reported_once():
  result, text = run_quietly(model='trivial', init_learning_rate=1e6,
                             num_batches=6, optimizer='momentum')
  assert result.status == 'ok'
  assert result.diverged_at_step is not None
  assert text.count('training diverged') == 1
  assert result.record['summary']['diverged_at_step'] == (
      result.diverged_at_step)


def test_tf_build_follows_the_onednn_switch():
  """The header's TF build line says what this process really runs with."""
  script = ('from tf_cnn_benchmarks.measure import environment; '
            'print(environment.tf_build_line())')
  lines = {}
  for value in ('0', '1'):
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS=value)
    done = subprocess.run([sys.executable, '-c', script], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines[value] = done.stdout.strip().splitlines()[-1]
  assert lines['0'].endswith('oneDNN off')
  assert lines['1'].endswith('oneDNN on')
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  # The distribution named is the one pip installed TensorFlow from.
  name = lines['0'].split(',')[0]
  assert metadata.version(name) == __import__('tensorflow').__version__


def test_nchw_on_a_cpu_without_onednn_is_refused_before_anything_runs(
    tmp_path):
  """TensorFlow's own CPU kernels pool in NHWC only: with oneDNN off, NCHW
  is refused up front with the way out, not failed at the first step."""
  done = {}
  for value in ('0', '1'):
    result_dir = tmp_path / value
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS=value)
    done[value] = subprocess.run(
        [sys.executable, SCRIPT, '--model=lenet', '--data_format=NCHW',
         '--batch_size=2', '--num_batches=2', '--num_warmup_batches=1',
         '--result_dir=%s' % result_dir],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
  off, on = done['0'], done['1']
  assert off.returncode == exit_codes.USAGE, off.stdout + off.stderr
  assert ('oneDNN is off in this process: TF_ENABLE_ONEDNN_OPTS=0 turns it '
          'off. Run with TF_ENABLE_ONEDNN_OPTS=1') in off.stderr
  assert not (tmp_path / '0').exists() or not any((tmp_path / '0').iterdir())
  # With oneDNN on, the same NCHW run trains (the refusal is not blanket).
  assert on.returncode == exit_codes.OK, on.stdout + on.stderr
  assert 'total images/sec' in on.stdout


def test_no_tensorflow_says_how_to_install_one():
  script = ('import sys; sys.modules["tensorflow"] = None; '
            'from tf_cnn_benchmarks import cli; '
            'sys.exit(cli.main(["tf_cnn_benchmarks", "--model=trivial"]))')
  done = subprocess.run([sys.executable, '-c', script], cwd=REPO,
                        capture_output=True, text=True, timeout=120)
  assert done.returncode == exit_codes.RUN_FAILED, done.stderr
  assert 'no TensorFlow can be imported' in done.stderr
  assert 'pip install -e ".[cpu]"' in done.stderr
  assert 'Traceback' not in done.stderr



@pytest.mark.timeout(300)
def test_the_record_says_how_busy_the_machine_was_and_the_cpu_per_image():
  """Two spinning processes during the timed loop: other_cpu_share sees
  them; cpu_seconds_per_image is this process's CPU time per timed image
  (it cannot exceed every core busy for the whole loop)."""
  import multiprocessing  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top
  spinners = [multiprocessing.Process(target=_spin, daemon=True)
              for _ in range(os.cpu_count() or 1)]
  for spinner in spinners:
    spinner.start()
  try:
    busy, _ = run_quietly(model='trivial', num_batches=200,
                          batch_size=32)
  finally:
    for spinner in spinners:
      spinner.kill()
  summary = busy.record['summary']
  assert summary['other_cpu_share'] > 0.25, summary
  images = 200 * 32
  wall = busy.record['timing']['timed_wall_time_sec']
  assert 0 < summary['cpu_seconds_per_image'] * images <= (
      wall * (os.cpu_count() or 1) * 1.05), summary


def _spin():
  while True:
    pass


_KERAS_PROBE = r'''
import sys
from tf_cnn_benchmarks.process import logs
assert logs.load_tensorflow(int(sys.argv[1]))
print('keras' in sys.modules)
import tensorflow as tf
print(tf.keras.layers.Dense(3)(tf.ones([1, 2])).shape)
'''


@pytest.mark.parametrize('verbosity', [0, 2])
def test_tensorflow_loads_without_keras_which_still_loads_when_used(
    verbosity):
  """TensorFlow's import skips its eager load of Keras (0.85 s of every
  process's start: process/keras_skip.py); Keras still works, loaded on
  first use."""
  out = subprocess.run([sys.executable, '-c', _KERAS_PROBE, str(verbosity)],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split('\n')[:2] == ['False', '(1, 3)'], out.stdout


def test_pytest_processes_load_tensorflow_without_keras_too():
  """tests/conftest.py loads TensorFlow as the harness does, without its
  eager load of Keras: 2.6 s of every pytest process, and the mutation
  check starts one per breakage."""
  out = subprocess.run(
      [sys.executable, '-c',
       "import sys, tests.conftest; print('keras' in sys.modules)"],
      cwd=REPO, capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split('\n')[-2:] == ['False', ''], out.stdout
