"""Closing the terminal (SIGHUP) stops a run like SIGTERM, record kept.

A real benchmark runs on a pseudo-terminal that is its controlling
terminal, as in a shell; the test closes the terminal's master side, so
the kernel sends SIGHUP and every later write to the terminal fails with
EIO. Before, SIGHUP killed the process by its default action: no word, no
record; and a report line written after the hangup would have raised.
"""

import json
import os
import pty
import select
import signal
import sys
import time

import pytest

from tests.driver_helpers import REPO, SCRIPT
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.liveness import stop_request

# The stop's own bound (a step, then the record) plus start-up slack on two
# shared cores.
EXIT_BOUND_SECONDS = 15


def _run_on_a_terminal(argv):
  """(pid, master fd) of ``argv`` run with a pty as its controlling
  terminal (its own session, as a shell's job is)."""
  pid, master = pty.fork()
  if pid == 0:  # the child: its stdin/stdout/stderr are the terminal
    os.chdir(REPO)
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    os.execve(sys.executable, [sys.executable] + argv, env)
  return pid, master


def _read_until(master, text, timeout):
  seen, deadline = b'', time.monotonic() + timeout
  while text.encode() not in seen:
    left = deadline - time.monotonic()
    assert left > 0, seen.decode(errors='replace')[-3000:]
    ready, _, _ = select.select([master], [], [], left)
    if ready:
      try:
        chunk = os.read(master, 4096)
      except OSError:  # EIO: the child has gone
        chunk = b''
      assert chunk, seen.decode(errors='replace')[-3000:]
      seen += chunk
  return seen.decode(errors='replace')


def _exit_code(pid, timeout):
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
      return os.waitstatus_to_exitcode(status)
    time.sleep(0.05)
  os.kill(pid, signal.SIGKILL)
  os.waitpid(pid, 0)
  raise AssertionError('still running %d s after the hangup' % timeout)


def test_sighup_is_a_stop_request():
  assert signal.SIGHUP in stop_request.STOP_SIGNALS


@pytest.mark.timeout(300)
def test_closing_the_terminal_ends_the_run_with_its_record(tmp_path):
  runs = tmp_path / 'runs'
  pid, master = _run_on_a_terminal(
      [SCRIPT, '--device=cpu', '--model=trivial', '--batch_size=8',
       '--num_batches=1000000', '--num_warmup_batches=1',
       '--display_every=1000', '--result_dir=%s' % runs])
  try:
    _read_until(master, 'Done warm up', 240)
  finally:
    hung_up = time.monotonic()
    os.close(master)  # the terminal goes away: SIGHUP, then EIO on writes
  code = _exit_code(pid, EXIT_BOUND_SECONDS + 10)
  took = time.monotonic() - hung_up
  assert code == exit_codes.INTERRUPTED
  assert took < EXIT_BOUND_SECONDS
  (name,) = [n for n in os.listdir(runs) if n.endswith('.json')]
  record = json.loads((runs / name).read_text())
  assert record['status'] == 'interrupted'
  assert 'SIGHUP' in record['failure']['message']


@pytest.mark.cluster
@pytest.mark.timeout(400)
def test_closing_the_terminal_stops_a_launched_cluster_with_every_record(
    tmp_path):
  """The launcher takes SIGHUP as a stop: it stops every task with
  SIGTERM, so each leaves its record, and exits 130. (Before, SIGHUP
  killed the launcher, and its tasks died of its death signal, SIGKILL,
  with no record.)"""
  from tests.cluster import helpers  # pylint: disable=g-import-not-at-top
  flags = helpers.tiny_flags(str(tmp_path), num_batches=100000,
                             display_every=20)
  pid, master = _run_on_a_terminal(
      [SCRIPT, 'launch', '--ps', '1', '--workers', '2', '--'] + flags)
  try:
    _read_until(master, 'total_loss', 300)  # a worker's table head
  finally:
    os.close(master)
  assert _exit_code(pid, 60) == exit_codes.INTERRUPTED
  records = helpers.records(str(tmp_path))
  statuses = {task: r['status'] for task, r in records.items()}
  assert statuses == {'worker0': 'interrupted', 'worker1': 'interrupted'}
