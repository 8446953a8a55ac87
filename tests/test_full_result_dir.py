"""A --result_dir the record cannot be written to (issue 29, finding A).

A full disk (a real 1 MB tmpfs, filled) must not change how a run ends:
stopped by SIGTERM while blocked inside TensorFlow, the watchdog still
ends it with 130 within the bound; finished normally, it still exits with
its own status. Either way one line says the record could not be
written, and no traceback.
"""

import os
import signal
import subprocess
import time

import pytest

from studies.chaos_faults import SmallDisk
from tests.driver_helpers import LiveRun
from tests import tools
from tests.driver_helpers import run_cli
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.liveness import watchdog
from tf_cnn_benchmarks.run import record



@pytest.fixture(autouse=True)
def _root():
  tools.require_root('mounting a tmpfs')


# The bound the launcher and the ssh guard wait before SIGKILL (S1 promises
# the signal bound; a local run takes ~3 s of it).
EXIT_BOUND_SECONDS = watchdog.SIGNALLED_EXIT_SECONDS
NOT_WRITTEN = record.NOT_WRITTEN


@pytest.fixture
def full_result_dir(tmp_path):
  with SmallDisk(str(tmp_path / 'runs'), size='1m') as disk:
    disk.fill()
    yield tmp_path / 'runs'


def _check_one_clear_line(out, result_dir):
  said = [l for l in out.splitlines() if l.startswith(NOT_WRITTEN)]
  assert len(said) == 1, out
  assert said[0].startswith(NOT_WRITTEN + str(result_dir)), out
  assert 'No space left on device' in said[0], out
  assert 'Traceback' not in out, out
  assert 'Run record: ' not in out, out
  # Nothing claims the results were recorded.
  assert 'recorded' not in out.replace(NOT_WRITTEN, ''), out
  assert not [n for n in os.listdir(result_dir) if n != 'filler'], \
      os.listdir(result_dir)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigterm_blocked_in_a_step_with_a_full_result_dir(full_result_dir):
  # A warm-up step of resnet50 at batch 96 takes ~20 s on two cores: the
  # run is stuck inside TensorFlow, so the watchdog's thread ends it.
  run = LiveRun(full_result_dir, '--model=resnet50', '--batch_size=96',
                '--num_batches=20', '--num_warmup_batches=2',
                '--stall_timeout=0')
  try:
    run.wait_for_line(
        lambda l: l.startswith('... still warm-up step 1 of 2 ('))
    sent = time.monotonic()
    run.proc.send_signal(signal.SIGTERM)
    try:
      code = run.ended(EXIT_BOUND_SECONDS)
    except subprocess.TimeoutExpired:
      pytest.fail('no exit %d s after SIGTERM:\n%s' % (EXIT_BOUND_SECONDS,
                                                       run.output()))
    took = time.monotonic() - sent
    out = run.output()
    assert code == exit_codes.INTERRUPTED, out
    assert took < EXIT_BOUND_SECONDS, out
    assert 'Interrupted' in out, out
    _check_one_clear_line(out, full_result_dir)
  finally:
    run.close()


def test_a_run_that_ends_normally_keeps_its_status(full_result_dir):
  done = run_cli('--device=cpu', '--model=trivial', '--batch_size=2',
                 '--num_batches=2', '--num_warmup_batches=0',
                 '--result_dir=%s' % full_result_dir)
  out = done.stdout + done.stderr
  assert done.returncode == exit_codes.OK, out
  assert 'total images/sec:' in out, out
  _check_one_clear_line(out, full_result_dir)
