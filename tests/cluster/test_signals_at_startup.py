"""A cluster task stopped while it starts: exit 130 within seconds, recorded.

A signal that arrives before the first step used to set a flag nobody read
until that step; the task then waited out --startup_timeout. Each test
stops a real worker in one start-up phase, detected from its own output
(the watchdog announces a phase that lasts 5 s), never by a sleep.
"""

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.cluster import helpers
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.liveness import early_signals

pytestmark = pytest.mark.cluster

# From the signal to the task's exit: ~2 s, with slack for two busy cores.
EXIT_BOUND_SECONDS = 15


def _sigterm_when(task, log, ready, what):
  """SIGTERMs ``task`` once ``ready()``; returns (exit code, seconds from
  the signal to the exit)."""
  def alive_and_ready():
    assert task.poll() is None, helpers.read(log)
    return ready()
  helpers.wait_for(alive_and_ready, 240, what)
  sent = time.monotonic()
  task.send_signal(signal.SIGTERM)
  code = task.wait(timeout=60)
  return code, time.monotonic() - sent


def _stop_while(tmp_path, ps_hosts, workers, phase_words, start_ps=False,
                **overrides):
  """Starts worker0 (and ps0 when ``start_ps``), SIGTERMs worker0 once it
  announces ``phase_words``; returns (exit code, output, seconds, record).
  """
  overrides.setdefault('variable_update', 'parameter_server')
  flags = helpers.tiny_flags(str(tmp_path), startup_timeout=120,
                             **overrides) + [
      '--worker_hosts=' + ','.join(workers)]
  if ps_hosts:
    flags.append('--ps_hosts=' + ','.join(ps_hosts))
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

    code, took = _sigterm_when(
        worker, log, lambda: re.search(
            r'^\.\.\. still %s' % re.escape(phase_words),
            helpers.read(log), re.M) is not None,
        'worker0 to announce ' + phase_words)
  finally:
    helpers.kill(procs)
  output = helpers.read(log)
  return code, output, took, helpers.records(str(tmp_path)).get('worker0')


def _assert_interrupted(code, output, took, rec, phase_words, phase_key):
  assert code == exit_codes.INTERRUPTED, helpers.end_first(output)
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
def test_tf2_sigterm_while_waiting_for_the_other_workers(tmp_path):
  """--engine=tf2 (MultiWorkerMirroredStrategy), worker1 never starts:
  worker0 waits for its port before the coordination service's
  registration barrier, which holds the interpreter (a SIGTERM there used
  to wait for the barrier's timeout and end with exit 4)."""
  workers = ['127.0.0.1:%d' % helpers.free_port() for _ in range(2)]
  words = 'waiting for worker1 to accept connections'
  _assert_interrupted(*_stop_while(
      tmp_path, [], workers, words, engine='tf2',
      variable_update='collective_all_reduce'), words, 'peers')


@pytest.mark.timeout(300)
def test_tf2_sigterm_taken_by_tensorflows_notifier_during_the_join(tmp_path):
  """--engine=tf2 (MultiWorkerMirroredStrategy): worker1 joins 20 s late
  (a test fault), so worker0 sits in TensorFlow's registration barrier,
  which holds the interpreter, with TensorFlow's preemption notifier's
  SIGTERM handler in place of the run's; SIGTERMed there, worker0 stops
  once the join ends (before the fix the notifier kept the signal and
  worker0 trained on: the chaos soak's seed 6015)."""
  # (Without it the wait below could only time out: CI once did so.)
  assert os.path.exists(helpers.PY_SPY), (
      'py-spy is not installed beside %s: pip install py-spy (setup.cfg\'s '
      'test extra has it)' % sys.executable)
  late = 20
  workers = ['127.0.0.1:%d' % helpers.free_port() for _ in range(2)]
  flags = helpers.tiny_flags(
      str(tmp_path), startup_timeout=120, engine='tf2',
      variable_update='collective_all_reduce', num_batches=100000,
      display_every=100,
      # TensorFlow's own lines too: its notifier's "SIGTERM caught".
      verbosity=2) + ['--worker_hosts=' + ','.join(workers)]
  logs = {label: str(tmp_path / (label + '.log'))
          for label in ('worker0', 'worker1')}
  procs = {}
  try:
    for index, label in enumerate(sorted(logs)):
      procs[label] = helpers.start(
          [helpers.SCRIPT] + flags + ['--job_name=worker',
                                      '--task_index=%d' % index],
          log_path=logs[label],
          env={helpers.FAULT_ENV: 'late_join:worker1:step0:x%d' % late})
    helpers.wait_for(
        lambda: 'Joining %d s late' % late in helpers.read(logs['worker1']),
        240, 'worker1 to start its late join')
    # worker0 inside the strategy's join (py-spy reads its stack while
    # the join holds the interpreter), then a moment for TensorFlow to
    # install its handler as the join starts.
    helpers.wait_for(
        lambda: 'Context.ensure_initialized' in helpers.stacks_of(
            procs['worker0'].pid), 30, 'worker0 to be in the join')
    time.sleep(2)
    assert procs['worker0'].poll() is None, helpers.read(logs['worker0'])
    sent = time.monotonic()
    procs['worker0'].send_signal(signal.SIGTERM)
    try:
      code = procs['worker0'].wait(timeout=late + EXIT_BOUND_SECONDS + 10)
    except subprocess.TimeoutExpired:
      # Where its threads are (the notice's watcher among them), and what
      # TensorFlow said: a miss seen only in CI is diagnosed from this.
      raise AssertionError('worker0 still running %.0f s after SIGTERM\n%s\n%s'
                           % (time.monotonic() - sent,
                              helpers.stacks_of(procs['worker0'].pid),
                              helpers.read(logs['worker0']))) from None
    took = time.monotonic() - sent
    procs['worker1'].wait(timeout=60)
  finally:
    helpers.kill(procs.values())
  output = helpers.read(logs['worker0'])
  assert code == exit_codes.INTERRUPTED, helpers.end_first(output)
  # The rest of the join (it cannot be cut short), then the signal bound.
  assert took < late + EXIT_BOUND_SECONDS, output
  # Said only when the notifier's key names worker0: the signal did land
  # in TensorFlow's handler, not the run's.
  assert ('TensorFlow\'s preemption notifier took a SIGTERM while the '
          'cluster\'s join held the interpreter' in output), output
  assert 'Stopping: got SIGTERM' in output, output
  rec = helpers.records(str(tmp_path)).get('worker0')
  assert rec is not None and rec['status'] == 'interrupted', output


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
  assert code == exit_codes.INTERRUPTED, helpers.end_first(output)
  assert took < EXIT_BOUND_SECONDS, output
  assert 'Stopping: got SIGTERM while waiting at the initialisation ' \
         'barrier' in output, output
  assert rec['status'] == 'interrupted'
  assert 'initialisation' in rec['phases'], rec['phases']


# -- before the run starts: reading the flags, loading TensorFlow, serving.
# Each moment is detected from the process's start-up trace
# (liveness/early_signals.TRACE_ENV), never by a sleep.


def _stop_at(tmp_path, moment, job=None):
  """Starts one process (a local run, or ``job`` 'worker'/'ps' of a
  cluster whose other tasks never come), SIGTERMs it once it has begun
  ``moment``; returns (exit code, output, seconds, its records)."""
  flags = helpers.tiny_flags(str(tmp_path), startup_timeout=120)
  if job:
    flags += ['--variable_update=parameter_server',
              '--ps_hosts=127.0.0.1:%d' % helpers.free_port(),
              '--worker_hosts=127.0.0.1:%d' % helpers.free_port(),
              '--job_name=' + job, '--task_index=0']
  log, trace = str(tmp_path / 'task.log'), tmp_path / 'task.trace'
  task = helpers.start([helpers.SCRIPT] + flags, log_path=log,
                       env={early_signals.TRACE_ENV: str(trace)})
  try:
    code, took = _sigterm_when(
        task, log, lambda: trace.exists() and moment in (
            trace.read_text().splitlines()), 'the task to begin ' + moment)
  finally:
    helpers.kill([task])
  records = []
  for path in glob.glob(str(tmp_path / '*.json')):
    with open(path) as f:
      records.append(json.load(f))
  return code, helpers.read(log), took, records


def _assert_recorded_interrupted(recs, job, output):
  assert len(recs) == 1, output
  rec = recs[0]
  assert rec['config']['job_name'] == job, rec['config']
  assert rec['status'] == 'interrupted', rec
  assert 'stopped by SIGTERM' in rec['failure']['message'], rec['failure']


@pytest.mark.timeout(300)
@pytest.mark.parametrize('job', [None, 'worker'])
def test_sigterm_while_loading_tensorflow(tmp_path, job):
  """A local run and a worker: 130 within the bound, and a record (built
  without TensorFlow when the import was still going on)."""
  code, output, took, recs = _stop_at(tmp_path, 'loading TensorFlow', job)
  assert code == exit_codes.INTERRUPTED, helpers.end_first(output)
  assert took < EXIT_BOUND_SECONDS, output
  assert 'Stopping: got SIGTERM while loading TensorFlow' in output, output
  _assert_recorded_interrupted(recs, job, output)


@pytest.mark.timeout(300)
def test_sigterm_right_after_start(tmp_path):
  """Maybe before the flags are read: 130 whatever the moment, a record
  whenever --result_dir was known, else a line saying there is none."""
  code, output, took, recs = _stop_at(tmp_path, 'starting')
  assert code == exit_codes.INTERRUPTED, helpers.end_first(output)
  assert took < EXIT_BOUND_SECONDS, output
  if 'No run record: the command line was not read yet.' in output:
    assert not recs, recs
  else:
    _assert_recorded_interrupted(recs, None, output)


@pytest.mark.timeout(300)
@pytest.mark.parametrize('moment', ['loading TensorFlow',
                                    'serving variables'])
def test_sigterm_stops_a_ps_at_once_without_a_record(tmp_path, moment):
  code, output, took, recs = _stop_at(tmp_path, moment, 'ps')
  assert code == exit_codes.INTERRUPTED, helpers.end_first(output)
  assert took < EXIT_BOUND_SECONDS, output
  assert not recs, recs
