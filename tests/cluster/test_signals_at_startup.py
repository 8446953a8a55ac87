"""A cluster task stopped while it starts: exit 130 within seconds, recorded.

A signal that arrives before the first step used to set a flag nobody read
until that step; the task then waited out --startup_timeout. Each test
stops a real worker in one start-up phase, detected from its own output
(the watchdog announces a phase that lasts 5 s), never by a sleep.
"""

import re
import signal
import socket
import time

import pytest

from tests.cluster import helpers
from tf_cnn_benchmarks import exit_codes

pytestmark = pytest.mark.cluster

# From the signal to the task's exit: ~2 s, with slack for two busy cores.
EXIT_BOUND_SECONDS = 15


def _stop_while(tmp_path, ps_hosts, workers, phase_words, start_ps=False):
  """Starts worker0 (and ps0 when ``start_ps``), SIGTERMs worker0 once it
  announces ``phase_words``; returns (exit code, output, seconds, record).
  """
  flags = helpers.tiny_flags(str(tmp_path), variable_update='parameter_server',
                             startup_timeout=120) + [
      '--ps_hosts=' + ','.join(ps_hosts),
      '--worker_hosts=' + ','.join(workers)]
  log = str(tmp_path / 'worker0.log')
  procs = []
  try:
    if start_ps:
      procs.append(helpers.start([helpers.SCRIPT] + flags + [
          '--job_name=ps', '--task_index=0'],
                                 log_path=str(tmp_path / 'ps0.log')))
    worker = helpers.start([helpers.SCRIPT] + flags + [
        '--job_name=worker', '--task_index=0'], log_path=log)
    procs.append(worker)

    def announced():
      assert worker.poll() is None, helpers.read(log)
      return re.search(r'^\.\.\. still %s' % re.escape(phase_words),
                       helpers.read(log), re.M) is not None
    helpers.wait_for(announced, 240, 'worker0 to announce ' + phase_words)
    sent = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    code = worker.wait(timeout=60)
    took = time.monotonic() - sent
  finally:
    helpers.kill(procs)
  output = helpers.read(log)
  return code, output, took, helpers.records(str(tmp_path)).get('worker0')


def _assert_interrupted(code, output, took, rec, phase_words, phase_key):
  assert code == exit_codes.INTERRUPTED, output
  assert took < EXIT_BOUND_SECONDS, output
  assert 'Stopping: got SIGTERM while %s' % phase_words in output, output
  assert rec is not None, output
  assert rec['status'] == 'interrupted'
  assert 'stopped by SIGTERM while %s' % phase_words in (
      rec['failure']['message'])
  assert phase_key in rec['phases'], rec['phases']


@pytest.mark.timeout(300)
def test_sigterm_while_waiting_for_the_peers(tmp_path):
  """Nobody listens at ps0's address: worker0 waits for it to accept."""
  ps = '127.0.0.1:%d' % helpers.free_port()
  worker = '127.0.0.1:%d' % helpers.free_port()
  words = 'waiting for ps0 to accept connections'
  _assert_interrupted(*_stop_while(tmp_path, [ps], [worker], words),
                      words, 'peers')


@pytest.mark.timeout(300)
def test_sigterm_while_creating_the_session(tmp_path):
  """ps0's port accepts but never answers: TensorFlow waits creating the
  session (a call no Python signal handler interrupts)."""
  with socket.socket() as silent:
    silent.bind(('127.0.0.1', 0))
    silent.listen(16)
    ps = '127.0.0.1:%d' % silent.getsockname()[1]
    worker = '127.0.0.1:%d' % helpers.free_port()
    words = 'creating the session'
    _assert_interrupted(*_stop_while(tmp_path, [ps], [worker], words),
                        words, 'session')


@pytest.mark.timeout(300)
def test_sigterm_while_initialising(tmp_path):
  """worker1 never starts: worker0 waits at the initialisation barrier."""
  ps = '127.0.0.1:%d' % helpers.free_port()
  workers = ['127.0.0.1:%d' % helpers.free_port() for _ in range(2)]
  code, output, took, rec = _stop_while(tmp_path, [ps], workers,
                                        'initialising', start_ps=True)
  assert code == exit_codes.INTERRUPTED, output
  assert took < EXIT_BOUND_SECONDS, output
  assert 'Stopping: got SIGTERM while waiting at the initialisation ' \
         'barrier' in output, output
  assert rec['status'] == 'interrupted'
  assert 'initialisation' in rec['phases'], rec['phases']
