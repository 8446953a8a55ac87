"""A cluster that cannot complete ends by itself, saying who was missing."""

import os
import re
import signal
import socket
import time

import pytest

from tests.cluster import helpers
from tf_cnn_benchmarks import exit_codes

pytestmark = pytest.mark.cluster


@pytest.mark.timeout(120)
def test_missing_worker_is_named_and_everyone_exits(tmp_path):
  """worker1 never starts: worker0's start barrier and ps0 both give up."""
  ps = '127.0.0.1:%d' % helpers.free_port()
  workers = '127.0.0.1:%d,127.0.0.1:%d' % (helpers.free_port(),
                                           helpers.free_port())
  common = helpers.tiny_flags(tmp_path, variable_update='parameter_server',
                              startup_timeout=6) + [
                                  '--ps_hosts=' + ps,
                                  '--worker_hosts=' + workers]
  logs = {name: str(tmp_path / (name + '.log')) for name in ('ps0',
                                                              'worker0')}
  procs = []
  try:
    procs.append(helpers.start([helpers.SCRIPT] + common + [
        '--job_name=ps', '--task_index=0'], log_path=logs['ps0']))
    procs.append(helpers.start([helpers.SCRIPT] + common + [
        '--job_name=worker', '--task_index=0'], log_path=logs['worker0']))
    ps_code = procs[0].wait(timeout=90)
    worker_code = procs[1].wait(timeout=30)
  finally:
    helpers.kill(procs)
  with open(logs['worker0']) as f:
    worker_out = f.read()
  with open(logs['ps0']) as f:
    ps_out = f.read()
  assert worker_code == exit_codes.UNREACHABLE, worker_out
  assert re.search(r'worker1 never reached the initialisation barrier '
                   r'within 6 s', worker_out), worker_out
  assert ps_code == exit_codes.UNREACHABLE, ps_out
  assert 'worker0 is done' in ps_out
  assert 'worker1 never appeared within 6 s' in ps_out, ps_out
  rec = helpers.records(str(tmp_path))['worker0']
  assert rec['status'] == 'unreachable'
  assert rec['failure']['task'] == 'worker1'
  assert 'Root cause: worker1 (ClusterWaitTimeout)' in worker_out


@pytest.mark.timeout(120)
@pytest.mark.parametrize('absent', ['worker1', 'worker0'])
def test_tf2_missing_worker_is_named_and_the_other_exits(tmp_path, absent):
  """--engine=tf2 (MultiWorkerMirroredStrategy): the worker that came
  waits for the other's port for --startup_timeout (before the
  coordination service's registration barrier, which holds the
  interpreter), then exits 4 naming it; also when the absent one is
  worker0, the service's own host."""
  workers = ['127.0.0.1:%d' % helpers.free_port() for _ in range(2)]
  present = 'worker1' if absent == 'worker0' else 'worker0'
  log = str(tmp_path / (present + '.log'))
  flags = helpers.tiny_flags(
      str(tmp_path), engine='tf2', variable_update='collective_all_reduce',
      startup_timeout=6) + ['--worker_hosts=' + ','.join(workers),
                            '--job_name=worker',
                            '--task_index=' + present[-1]]
  started = time.monotonic()
  proc = helpers.start([helpers.SCRIPT] + flags, log_path=log)
  try:
    code = proc.wait(timeout=90)
  finally:
    helpers.kill([proc])
  took, output = time.monotonic() - started, helpers.read(log)
  assert code == exit_codes.UNREACHABLE, helpers.end_first(output)
  # --startup_timeout, plus loading TensorFlow on a loaded machine.
  assert took < 6 + 30, output
  assert re.search(
      r'Run failed: %s cannot start: no server answered at %s \(%s: '
      r'connection refused\) within [56] s \(of --startup_timeout\)' % (
          present, absent, re.escape(workers[int(absent[-1])])),
      output), output
  assert 'Root cause: %s (ClusterWaitTimeout)' % absent in output
  rec = helpers.records(str(tmp_path))[present]
  assert rec['status'] == 'unreachable'
  assert rec['failure']['task'] == absent
  assert rec['config']['engine'] == 'tf2'


@pytest.mark.timeout(120)
def test_tf2_parameter_server_missing_worker_is_named(tmp_path):
  """--engine=tf2 parameter_server: worker1 never starts. The coordinator
  (controller0) waits for every serving task's port for --startup_timeout
  before ParameterServerStrategy connects (TensorFlow would wait
  unbounded), then exits 4 naming worker1; the serving tasks, which never
  heard from the coordinator, give up after --startup_timeout too."""
  hosts = {job: ['127.0.0.1:%d' % helpers.free_port() for _ in range(n)]
           for job, n in (('ps', 1), ('worker', 2), ('controller', 1))}
  common = helpers.tiny_flags(
      str(tmp_path), engine='tf2', variable_update='parameter_server',
      cross_replica_sync=False, startup_timeout=6) + [
          '--%s_hosts=%s' % (job, ','.join(addresses))
          for job, addresses in hosts.items() if job != 'controller'] + [
              '--controller_host=' + hosts['controller'][0]]
  tasks = [('ps0', ['--job_name=ps', '--task_index=0']),
           ('worker0', ['--job_name=worker', '--task_index=0']),
           ('controller0', ['--job_name=controller', '--task_index=0'])]
  started = time.monotonic()
  codes, out = helpers.run_by_hand(tmp_path, common, tasks, 90)
  took = time.monotonic() - started
  assert codes == {'ps0': exit_codes.UNREACHABLE,
                   'worker0': exit_codes.UNREACHABLE,
                   'controller0': exit_codes.UNREACHABLE}, out
  # --startup_timeout, plus loading TensorFlow on a loaded machine.
  assert took < 6 + 30, out
  assert ('no server answered at worker1 (%s: connection refused) within '
          '6 s' % hosts['worker'][1]) in out['controller0'], out
  assert 'Root cause: worker1 (ClusterWaitTimeout)' in out['controller0']
  rec = helpers.records(str(tmp_path))['controller0']
  assert rec['status'] == 'unreachable'
  assert rec['failure']['task'] == 'worker1'
  for label in ('ps0', 'worker0'):
    assert 'controller0 never appeared within 6 s' in out[label], out


@pytest.mark.timeout(150)
def test_tf2_worker_whose_input_fails_is_named_by_the_other(tmp_path):
  """--engine=tf2 (MultiWorkerMirroredStrategy): worker1's --data_dir is
  missing, so its run fails opening its input, after it joined the cluster
  and before the tf2 engine starts. It leaves its note on the board all the
  same, so worker0, whose build waits in a collective for worker1, names
  worker1's data error (not "worker1 is gone"); both end within seconds."""
  workers = ['127.0.0.1:%d' % helpers.free_port() for _ in range(2)]
  common = helpers.tiny_flags(
      str(tmp_path), engine='tf2', variable_update='collective_all_reduce',
      num_batches=2) + ['--worker_hosts=' + ','.join(workers),
                        '--job_name=worker']
  missing = str(tmp_path / 'no_such_data')
  started = time.monotonic()
  codes, out = helpers.run_by_hand(tmp_path, common, [
      ('worker0', ['--task_index=0']),
      ('worker1', ['--task_index=1', '--data_dir=' + missing])], 120)
  took = time.monotonic() - started
  assert codes == {'worker0': exit_codes.RUN_FAILED,
                   'worker1': exit_codes.RUN_FAILED}, out
  # Starting two TensorFlow processes on a loaded machine, then seconds.
  assert took < 90, out
  assert missing in out['worker1'], out['worker1']
  assert 'Root cause: worker1 (DataError)' in out['worker0'], out
  recs = helpers.records(str(tmp_path))
  for label in ('worker0', 'worker1'):
    assert recs[label]['status'] == 'failed', recs[label]
    assert recs[label]['failure']['task'] == 'worker1', recs[label]
    assert recs[label]['failure']['type'] == 'DataError', recs[label]
  # A real failure is never taken for a refused copy and run again.
  assert not helpers.ended_by_a_refused_copy(recs)


@pytest.mark.timeout(150)
def test_tf2_parameter_server_coordinator_whose_input_fails_says_done(
    tmp_path):
  """--engine=tf2 parameter_server: the coordinator's --data_dir is
  missing, so it fails opening its input, after it connected to the
  cluster. It still tells the ps and the workers it is done: they exit 0
  at once (not "controller0 left without saying done"), and the launcher's
  first failure is the coordinator's data error."""
  missing = str(tmp_path / 'no_such_data')
  code, output = helpers.launch(
      ['--ps', '1', '--workers', '2'], helpers.tiny_flags(
          str(tmp_path), engine='tf2', variable_update='parameter_server',
          cross_replica_sync=False, data_dir=missing))
  assert code == exit_codes.RUN_FAILED, helpers.end_first(output)
  assert re.search(r'First failure: controller0: .*%s' % re.escape(missing),
                   output), output
  for label in ('ps0', 'worker0', 'worker1'):
    assert '%s: every client is done; exiting' % label in \
        helpers.task_lines(output, label), output
    assert re.search(r'\[launch\] %s +exit 0' % label, output), output
  rec = helpers.records(str(tmp_path))['controller0']
  assert rec['status'] == 'failed'
  assert rec['failure']['type'] == 'DataError'


def _run_alone(tmp_path, ps_hosts, timeout):
  """worker0 of a cluster whose ps tasks are at ``ps_hosts``; returns
  (exit code, output, seconds taken)."""
  log = str(tmp_path / 'worker0.log')
  flags = helpers.tiny_flags(str(tmp_path), variable_update='parameter_server',
                             startup_timeout=3) + [
      '--ps_hosts=' + ','.join(ps_hosts),
      '--worker_hosts=127.0.0.1:%d' % helpers.free_port(),
      '--job_name=worker', '--task_index=0']
  started = time.monotonic()
  proc = helpers.start([helpers.SCRIPT] + flags, log_path=log)
  try:
    code = proc.wait(timeout=timeout)
  finally:
    helpers.kill([proc])
  return code, helpers.read(log), time.monotonic() - started


@pytest.mark.timeout(90)
def test_ps_counts_an_arrived_client_gone_though_no_probe_saw_it(tmp_path):
  """Both workers arrive (their ARRIVED signals, sent here as a worker
  sends them) and are gone before ps0's probes, about a second apart, ever
  find their ports open: as a trivial run killed within two seconds of its
  start, which once kept ps0 waiting out --startup_timeout. ps0 must count
  them gone and leave (exit 1) at once, not call them "never appeared"."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster.task import done_signals  # pylint: disable=g-import-not-at-top
  ps = '127.0.0.1:%d' % helpers.free_port()
  workers = ['127.0.0.1:%d' % helpers.free_port() for _ in range(2)]
  common = helpers.tiny_flags(tmp_path, variable_update='parameter_server',
                              startup_timeout=60) + [
                                  '--ps_hosts=' + ps,
                                  '--worker_hosts=' + ','.join(workers)]
  log = str(tmp_path / 'ps0.log')
  ps0 = helpers.start([helpers.SCRIPT] + common + [
      '--job_name=ps', '--task_index=0'], log_path=log)
  try:
    helpers.wait_for(lambda: 'serving at' in helpers.read(log), 60,
                     'ps0 to serve')
    graph = tf.Graph()
    with graph.as_default():
      queue = done_signals.done_queue('/job:ps/task:0')
      arrivals = [done_signals.signal_op(queue, done_signals.ARRIVED, i)
                  for i in range(2)]
    tf.compat.v1.Session('grpc://' + ps, graph=graph, config=(
        tf.compat.v1.ConfigProto(device_filters=['/job:ps/task:0']))).run(
            arrivals)
    arrived_at = time.monotonic()
    code = ps0.wait(timeout=30)
    took = time.monotonic() - arrived_at
  finally:
    helpers.kill([ps0])
  output = helpers.read(log)
  assert code == exit_codes.RUN_FAILED, helpers.end_first(output)
  assert took < 15, output
  assert ('exiting: worker0, worker1 left without saying done (worker0 '
          'refuses connections at %s (its process is gone)' % workers[0]
          ) in output, output


@pytest.mark.timeout(60)
def test_absent_peers_are_named_with_address_and_reason(tmp_path):
  refused = '127.0.0.1:%d' % helpers.free_port()
  code, output, took = _run_alone(
      tmp_path, [refused, 'no-such-host.invalid:2222'], timeout=45)
  assert code == exit_codes.UNREACHABLE, helpers.end_first(output)
  assert took < 30, output
  assert ('no server answered at ps0 (%s: connection refused), ps1 '
          '(no-such-host.invalid:2222: no such host name' % refused) in output
  rec = helpers.records(str(tmp_path))['worker0']
  assert rec['status'] == 'unreachable'
  assert rec['failure']['task'] == 'ps0'


@pytest.mark.timeout(60)
def test_session_creation_with_a_silent_peer_is_bounded(tmp_path):
  """ps0's port accepts connections but nothing answers: TensorFlow would
  wait forever creating the session; the watchdog ends it (exit 4)."""
  with socket.socket() as silent:
    silent.bind(('127.0.0.1', 0))
    silent.listen(16)
    address = '127.0.0.1:%d' % silent.getsockname()[1]
    code, output, took = _run_alone(tmp_path, [address], timeout=45)
  assert code == exit_codes.UNREACHABLE, helpers.end_first(output)
  assert took < 30, output
  assert ('unreachable: ps0 (%s: accepts connections but never answered '
          'TensorFlow\'s session creation)' % address) in output, output
  assert 'Root cause: ps0 (PeerUnreachable)' in output
  assert helpers.records(str(tmp_path))['worker0']['status'] == 'unreachable'


@pytest.mark.timeout(150)
@pytest.mark.parametrize('engine,cluster', [
    ('graph', dict(ps=1, variable_update='parameter_server')),
    # TensorFlow's preemption notifier takes SIGTERM when the strategy
    # starts; the run's stop request takes it back (stop_request.py).
    ('tf2', dict(ps=0, variable_update='collective_all_reduce')),
])
def test_launcher_sigterm_tears_every_task_down(tmp_path, engine, cluster):
  process, log = helpers.launch_in_background(tmp_path, engine=engine,
                                              **cluster)
  try:
    pids = helpers.wait_until_step(process, log)
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=30)
  finally:
    helpers.kill([process])
  output = helpers.read(log)
  assert code == exit_codes.INTERRUPTED, helpers.end_first(output)
  assert 'stopping the cluster: stopped by SIGTERM' in output
  assert 'cluster summary' in output
  for label, pid in pids.items():
    assert not helpers.pid_alive(pid), '%s (pid %d) survived' % (label, pid)
  # The launcher exits 130 whatever its tasks did: each training task must
  # itself have stopped on the relayed signal and said so in its record
  # (ps tasks keep none).
  recs = helpers.records(str(tmp_path))
  trainers = sorted(l for l in pids if l.startswith('worker'))
  assert sorted(recs) == trainers, output
  for label in trainers:
    assert recs[label]['status'] == 'interrupted', (label, recs[label])
    assert 'SIGTERM' in recs[label]['failure']['message']


@pytest.mark.timeout(150)
def test_killed_launcher_leaves_no_orphans(tmp_path):
  """Even SIGKILL, which the launcher cannot handle: PR_SET_PDEATHSIG.
  The tasks print nothing after their first step row (a row every 10**6
  steps), so none of them learns of the launcher's death from a broken
  pipe: only the kernel's signal ends them (with the launcher's pipes they
  outlived it in a check without that signal)."""
  process, log = helpers.launch_in_background(tmp_path, display_every=10**6)
  pids = {}
  try:
    pids = helpers.wait_until_step(process, log, step=1)
    process.kill()
    process.wait()
    helpers.wait_for(lambda: not any(helpers.pid_alive(p)
                                     for p in pids.values()),
                     15, 'the tasks to die with the launcher')
  finally:
    helpers.kill([process])
    for pid in pids.values():
      if helpers.pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
