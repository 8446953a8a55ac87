"""A single-process run whose input hangs: a stalled file system under
--data_dir (issue 13, "single-process runs can't be interrupted while
blocked").

The shards are served through FUSE by a daemon the test stalls once
training runs (tests/stalled_mount.py): the run's input pipeline then
waits in the kernel for a file system that never answers, as on a hung
NFS mount, and the main thread waits inside session.run for a batch. Only
the watchdog thread can end such a run. The shards are small and the
model fast, so the pipeline's buffers (the shuffle buffer holds one epoch
of 90 images) drain in a moment.
"""

import os
import re
import signal
import threading
import time

import pytest

from tests import stalled_mount
from tests import tools
from tests.driver_helpers import LiveRun
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.liveness import waiting_files


@pytest.fixture(autouse=True)
def _fuse_available():
  why = stalled_mount.fuse_unavailable()
  if why is not None:
    tools.unavailable(why, tools.FUSE_INSTALL)

# Generous: two cores shared with other test runs.
EXIT_BOUND_SECONDS = 15


class _Run(LiveRun):
  """A real run training lenet on the shards under ``data_dir``."""

  def __init__(self, data_dir, runs, *flags):
    super().__init__(runs, '--model=lenet', '--batch_size=8',
                     '--num_batches=100000', '--num_warmup_batches=0',
                     '--display_every=1', '--data_dir=%s' % data_dir, *flags)

  def wait_until_training(self):
    """A step row: the pipeline has read the shards through the mount."""
    self.wait_for_line(lambda l: re.match(r'^3\timages/sec: ', l))

  def wait_until_waiting_on(self, mountpoint, timeout=120):
    """Observed, not slept for: the kernel shows a thread of the run
    waiting for an answer of the stalled file system."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
      assert self.proc.poll() is None, self.output()
      if _threads_in_fuse_wait(self.proc.pid):
        return
      time.sleep(0.05)
    raise AssertionError('no thread of the run waits on %s:\n%s' % (
        mountpoint, self.output()))


def _threads_in_fuse_wait(pid):
  waiting = 0
  for tid in os.listdir('/proc/%d/task' % pid):
    try:
      with open('/proc/%d/task/%s/wchan' % (pid, tid)) as f:
        waiting += f.read() == 'request_wait_answer'
    except OSError:
      continue
  return waiting


@pytest.fixture
def stalling(learnable_shards, tmp_path):
  """start(*flags) -> (run, mount): a run on the shards through a
  stallable mount. The run is killed, the daemon ended and the folder
  unmounted afterwards, whatever happened."""
  opened = []

  def start(*flags):
    mount = stalled_mount.StalledMount(learnable_shards, tmp_path / 'mnt')
    opened.append(mount)
    try:
      mount.__enter__()
    except stalled_mount.MountFailed as e:
      tools.unavailable('cannot mount a FUSE file system here: %s' % e,
                        tools.FUSE_INSTALL)
    run = _Run(mount.mountpoint, tmp_path / 'runs', *flags)
    opened.append(run)
    return run, mount
  yield start
  for thing in reversed(opened):
    if isinstance(thing, _Run):
      thing.close()
    else:
      thing.__exit__(None, None, None)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigterm_ends_a_run_blocked_on_a_stalled_file_system(stalling):
  run, mount = stalling('--stall_timeout=0')
  run.wait_until_training()
  mount.stall()
  run.wait_until_waiting_on(mount.mountpoint)
  sent = time.monotonic()
  run.proc.send_signal(signal.SIGTERM)
  code = run.ended(timeout=EXIT_BOUND_SECONDS + 30)
  took = time.monotonic() - sent
  out = run.output()
  assert code == exit_codes.INTERRUPTED, out
  assert took < EXIT_BOUND_SECONDS, (took, out)
  assert ('Stopping: got SIGTERM while running the timed steps; send it '
          'again to stop now.') in out
  rec = run.record()
  assert rec['status'] == 'interrupted'
  # The main thread never came back from its step: the watchdog ended it.
  assert 'ended by the watchdog' in rec['failure']['message'], out


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_stalled_file_system_is_reported_as_input_naming_the_file(
    stalling):
  run, mount = stalling('--stall_timeout=5', '--stall_shutdown_timeout=2')
  run.wait_until_training()
  mount.stall()
  code = run.ended(timeout=120)
  out = run.output()
  assert code == exit_codes.STALLED == 3, out
  assert re.search(r'^Stall report: no progress for \d+ s '
                   r'\(--stall_timeout=5\)\.$', out, re.M), out
  # Input, not compute; and the shard on the mount a thread waits on.
  blocked = re.search(r'^  blocked on (.*)$', out, re.M).group(1)
  assert blocked.startswith('input: the process waits without computing'), out
  assert re.search(r'a thread waits on the file system: (opening|reading) '
                   + re.escape(os.path.join(mount.mountpoint, 'train-')),
                   blocked), out
  rec = run.record()
  assert rec['status'] == 'stalled'
  assert 'blocked on input' in rec['failure']['message']


def test_a_thread_blocked_opening_a_fifo_is_named(tmp_path):
  """waiting_files on a real blocked thread: opening a FIFO for reading
  waits for a writer, in the kernel, as opening a shard on a hung file
  system waits for the server."""
  fifo = tmp_path / 'train-00000-of-00001'
  os.mkfifo(fifo)
  opened = threading.Thread(target=lambda: open(fifo, 'rb').close())
  opened.start()
  try:
    deadline = time.monotonic() + 30
    while not waiting_files.waited_on_under(str(tmp_path)):
      assert time.monotonic() < deadline, 'the opening thread never blocked'
      time.sleep(0.01)
    assert waiting_files.waited_on_under(str(tmp_path)) == [
        'opening %s' % fifo]
    assert waiting_files.waited_on_under(str(tmp_path / 'other')) == []
  finally:
    with open(fifo, 'wb'):
      pass
    opened.join()
