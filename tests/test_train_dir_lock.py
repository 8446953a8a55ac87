"""One writer per --train_dir (run/train_dir_lock.py), with real processes.

A second training run on a held --train_dir exits 2 naming the holder; a
holder killed by SIGKILL leaves a lock the next run takes over (and says
so); an evaluator following the checkpoints runs beside the trainer.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.driver_helpers import REPO
from tests.driver_helpers import run_cli
from tests.driver_helpers import SCRIPT
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.run import train_dir_lock

_TRAIN = ('--model=trivial', '--device=cpu', '--batch_size=2',
          '--num_warmup_batches=0', '--display_every=1')


def _start_trainer(train_dir, result_dir, num_batches=1000000):
  """A training run that holds train_dir until stopped."""
  env = dict(os.environ)
  env.pop('TF_CPP_MIN_LOG_LEVEL', None)
  return subprocess.Popen(
      [sys.executable, SCRIPT, *_TRAIN, '--num_batches=%d' % num_batches,
       '--train_dir=%s' % train_dir, '--save_model_steps=20',
       '--result_dir=%s' % result_dir],
      cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
      env=env)


def _wait_for_line(proc, text, seconds=240):
  """Reads proc's output until a line holds ``text``; returns the output."""
  out = ''
  deadline = time.monotonic() + seconds
  while time.monotonic() < deadline:
    line = proc.stdout.readline()
    if not line and proc.poll() is not None:
      break
    out += line
    if text in line:
      return out
  raise AssertionError('no %r within %d s:\n%s' % (text, seconds, out))


def _stop(proc):
  if proc.poll() is None:
    proc.send_signal(signal.SIGTERM)
  out, _ = proc.communicate(timeout=120)
  return out


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_second_run_on_a_held_train_dir_exits_2_naming_the_holder(tmp_path):
  train_dir = str(tmp_path / 'train')
  first = _start_trainer(train_dir, tmp_path / 'records')
  try:
    # A step has run: the lock was taken before the restore, long ago.
    _wait_for_line(first, 'images/sec')
    holder = train_dir_lock.read_holder(train_dir)
    assert holder is not None and holder.pid == first.pid
    second = run_cli(*_TRAIN, '--num_batches=3', '--train_dir=%s' % train_dir,
                     '--result_dir=')
    assert second.returncode == exit_codes.USAGE, second.stdout
    text = second.stdout + second.stderr
    assert 'is in use by another training run' in text, text
    assert 'pid %d on host %s, started %s' % (
        first.pid, socket.gethostname(), holder.started_at) in text, text
    # Refused before it touched anything: no restore, no checkpoint.
    assert 'Restored checkpoint' not in text
    assert first.poll() is None  # the holder trains on, unharmed
  finally:
    out = _stop(first)
  assert first.returncode == exit_codes.INTERRUPTED, out
  # A clean end releases the lock and deletes the holder's name.
  assert train_dir_lock.read_holder(train_dir) is None


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_lock_of_a_killed_run_is_taken_over(tmp_path):
  train_dir = str(tmp_path / 'train')
  first = _start_trainer(train_dir, '')
  try:
    _wait_for_line(first, 'images/sec')
    started_at = train_dir_lock.read_holder(train_dir).started_at
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
  finally:
    _stop(first)
  # The killed run's name is still there; its lock went with its process.
  assert train_dir_lock.read_holder(train_dir).pid == first.pid
  second = run_cli(*_TRAIN, '--num_batches=3', '--train_dir=%s' % train_dir,
                   '--result_dir=')
  text = second.stdout + second.stderr
  assert second.returncode == exit_codes.OK, text
  assert ('Took over --train_dir=%s from a run that ended without releasing '
          'it (pid %d on host %s, started %s' % (
              train_dir, first.pid, socket.gethostname(), started_at)
          in text), text
  assert train_dir_lock.read_holder(train_dir) is None


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_evaluator_follows_checkpoints_beside_the_trainer(tmp_path):
  """--eval --eval_interval_secs reads train_dir: it needs no lock."""
  train_dir = str(tmp_path / 'train')
  made = run_cli(*_TRAIN, '--num_batches=2', '--train_dir=%s' % train_dir,
                 '--result_dir=')
  assert made.returncode == exit_codes.OK, made.stdout + made.stderr
  trainer = _start_trainer(train_dir, '')
  evaluator = None
  try:
    _wait_for_line(trainer, 'Restored checkpoint')
    env = dict(os.environ)
    env.pop('TF_CPP_MIN_LOG_LEVEL', None)
    evaluator = subprocess.Popen(
        [sys.executable, SCRIPT, '--eval', '--eval_interval_secs=1',
         '--model=trivial', '--device=cpu', '--batch_size=2',
         '--num_batches=2', '--num_warmup_batches=0',
         '--train_dir=%s' % train_dir, '--result_dir='],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=env)
    _wait_for_line(evaluator, 'Following ')
    # The trainer's checkpoint every 20 steps reaches the evaluator.
    _wait_for_line(evaluator, 'Restored checkpoint')
    assert trainer.poll() is None
  finally:
    out = _stop(trainer)
    eval_out = _stop(evaluator) if evaluator else ''
  assert trainer.returncode == exit_codes.INTERRUPTED, out
  assert evaluator.returncode == exit_codes.INTERRUPTED, eval_out
  assert 'in use' not in eval_out


def test_a_holder_on_another_host_is_not_judged(tmp_path):
  """A leftover name from another host: the free lock proves nothing
  there, so the run refuses and says how to clear it."""
  train_dir = str(tmp_path)
  with open(os.path.join(train_dir, train_dir_lock.HOLDER_NAME), 'w') as f:
    json.dump({'host': 'elsewhere.example', 'pid': 4242,
               'started_at': '2024-05-01T10:00:00+00:00'}, f)
  with pytest.raises(train_dir_lock.TrainDirInUse) as raised:
    train_dir_lock.acquire(train_dir)
  message = str(raised.value)
  assert 'pid 4242 on host elsewhere.example' in message
  assert 'delete %s' % os.path.join(train_dir,
                                    train_dir_lock.HOLDER_NAME) in message
  assert raised.value.exit_code == exit_codes.USAGE
  # Refusing left the lock free and the name in place.
  os.unlink(os.path.join(train_dir, train_dir_lock.HOLDER_NAME))
  train_dir_lock.acquire(train_dir).release()


def test_lock_is_exclusive_within_one_process_too(tmp_path):
  """flock locks belong to the open file, so a second acquire in the same
  process (a library caller running two runs at once) is refused too, and
  a released lock can be taken again."""
  lock = train_dir_lock.acquire(str(tmp_path))
  with pytest.raises(train_dir_lock.TrainDirInUse, match='pid %d' %
                     os.getpid()):
    train_dir_lock.acquire(str(tmp_path))
  lock.release()
  train_dir_lock.acquire(str(tmp_path)).release()
