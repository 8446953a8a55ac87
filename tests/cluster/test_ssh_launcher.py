"""`launch --hosts` over real OpenSSH to fake hosts (network namespaces).

Each fake host (tests/cluster/fake_hosts.py) is a namespace with its own
address and its own sshd; the launcher runs in a further namespace and
reaches them with the real ssh client. The tasks are real TensorFlow
cluster tasks, under the launcher's remote guard (ssh_remote.py).
"""

import contextlib
import os
import re
import signal
import subprocess
import time

import pytest

from tests.cluster import helpers
from tests.cluster.fake_hosts import fake_hosts

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

# Every task of a torn-down cluster is gone within this long of the fault
# (failure grace 10 s + kill grace 5 s + ssh round trips), with slack for a
# loaded 2-core machine.
TEARDOWN_BOUND = 60


def _launch(fake, tmp_path, launcher_args, benchmark_flags, log):
  """Starts the launcher in the client namespace; output to ``log``."""
  return helpers.start(
      [helpers.SCRIPT, 'launch'] + launcher_args + ['--'] + benchmark_flags,
      prefix=fake.in_client(), log_path=str(tmp_path / log))


def _run(fake, tmp_path, launcher_args, benchmark_flags, timeout=240):
  process = _launch(fake, tmp_path, launcher_args, benchmark_flags,
                    'launch.log')
  try:
    code = process.wait(timeout=timeout)
  finally:
    helpers.kill([process])
  return code, helpers.read(str(tmp_path / 'launch.log'))


def _long_run(tmp_path):
  return helpers.tiny_flags(
      str(tmp_path / 'records'), variable_update='parameter_server',
      num_batches=100000, display_every=5)


def _wait_for_step(process, log, label, step=5):
  def reached():
    assert process.poll() is None, helpers.read(log)
    return re.search(r'\[%s\] %d\t' % (label, step),
                     helpers.read(log)) is not None
  helpers.wait_for(reached, 150, '%s to reach step %d' % (label, step))


@contextlib.contextmanager
def _running_cluster(fake, tmp_path):
  """A long 1 ps + 2 worker run, yielded (launcher process, log path) once
  worker1 is training; the launcher is always killed afterwards."""
  process = _launch(fake, tmp_path, fake.launcher_args() + [
      '--ps', '1', '--workers', '2'], _long_run(tmp_path), 'launch.log')
  log = str(tmp_path / 'launch.log')
  try:
    _wait_for_step(process, log, 'worker1')
    yield process, log
  finally:
    helpers.kill([process])


def _assert_namespaces_empty(fake):
  helpers.wait_for(lambda: not fake.stray_pids(), 20,
                   'every task to leave the fake hosts')


@pytest.mark.timeout(400)
def test_three_hosts_one_ps_two_workers_finish_with_records(tmp_path):
  records = tmp_path / 'records'
  flags = helpers.tiny_flags(str(records), variable_update='parameter_server')
  with fake_hosts(tmp_path) as fake:
    h = [x.address for x in fake.hosts]
    # Both host forms: plain (port and user from the ssh config) and
    # user@host:port.
    hosts = [h[0], 'root@%s:2022' % h[1], h[2]]
    code, out = _run(fake, tmp_path, fake.launcher_args(hosts) + [
        '--ps', '1', '--workers', '2', '--remote_workdir', helpers.REPO],
                     flags)
    _assert_namespaces_empty(fake)
  assert code == 0, out
  placement = out.index('[launch] placement: ')
  assert placement < out.index('[launch] started '), out
  assert ('placement: %s: ps0 %s:2222; root@%s:2022: worker0 %s:2222; '
          '%s: worker1 %s:2222' % (h[0], h[0], h[1], h[1], h[2], h[2])
          ) in out, out
  for i in range(2):
    assert helpers.task_lines(out, 'worker%d' % i), out
  recs = helpers.records(str(records))
  assert set(recs) >= {'worker0', 'worker1'}, sorted(recs)
  assert recs['worker0']['launched_on'] == 'root@%s:2022' % h[1]
  assert recs['worker1']['launched_on'] == h[2]
  assert len(helpers.step_losses(recs['worker1'])) == helpers.NUM_BATCHES
  # The summary names each task's host.
  assert re.search(r'\[launch\] worker1\s+%s\s+exit 0' % re.escape(h[2]),
                   out), out


@pytest.mark.timeout(200)
def test_host_refusing_ssh_is_named_before_anything_starts(tmp_path):
  flags = helpers.tiny_flags(str(tmp_path / 'records'))
  with fake_hosts(tmp_path, without_sshd=(2,)) as fake:
    code, out = _run(fake, tmp_path, fake.launcher_args() + [
        '--ps', '1', '--workers', '2'], flags, timeout=120)
    strays = fake.stray_pids()
  assert code == 4, out
  refused = fake.hosts[2].address
  assert re.search(r'Not starting: this host cannot run tasks\. %s: cannot '
                   r'ssh there: .*Connection refused' % re.escape(refused),
                   out), out
  assert '[launch] started' not in out, out
  assert not strays


@pytest.mark.timeout(200)
def test_host_with_another_harness_version_is_named(tmp_path):
  # A copy of the package in its own git repository, tagged with another
  # version: what that host's sshd puts first on PYTHONPATH.
  other = tmp_path / 'other_install'
  other.mkdir()
  subprocess.run(['cp', '-r', os.path.join(helpers.REPO, 'tf_cnn_benchmarks'),
                  str(other)], check=True)
  git = ['git', '-C', str(other), '-c', 'user.name=t', '-c',
         'user.email=t@example.com']
  for step in (['init', '-q'], ['add', '.'], ['commit', '-qm', 'other'],
               ['tag', 'v9.9-other']):
    subprocess.run(git + step, check=True, capture_output=True)
  flags = helpers.tiny_flags(str(tmp_path / 'records'))
  with fake_hosts(tmp_path, sshd_env={1: {'TCB_TEST_PYTHONPATH': str(other)}}
                  ) as fake:
    code, out = _run(fake, tmp_path, fake.launcher_args() + [
        '--ps', '1', '--workers', '2'], flags, timeout=120)
    strays = fake.stray_pids()
  assert code == 1, out
  assert 'the hosts run different versions' in out, out
  assert re.search(r'%s: harness v9\.9-other\S*, TensorFlow [0-9.]+ \(differs\)'
                   % re.escape(fake.hosts[1].address), out), out
  assert '[launch] started' not in out, out
  assert not strays


@pytest.mark.timeout(400)
def test_killing_one_hosts_task_ends_every_task_naming_it(tmp_path):
  with fake_hosts(tmp_path) as fake:
    with _running_cluster(fake, tmp_path) as (process, log):
      namespace, pid = fake.task_pid('worker', 1)
      assert namespace == fake.hosts[2].namespace, (namespace, pid)
      os.kill(pid, signal.SIGKILL)
      killed_at = time.monotonic()
      code = process.wait(timeout=TEARDOWN_BOUND + 30)
      took = time.monotonic() - killed_at
    _assert_namespaces_empty(fake)
  out = helpers.read(log)
  assert code != 0, out
  assert took < TEARDOWN_BOUND, (took, out)
  assert '[launch] First failure: worker1 was killed by SIGKILL' in out, out


@pytest.mark.timeout(400)
def test_sigterm_to_the_launcher_leaves_no_process_on_any_host(tmp_path):
  with fake_hosts(tmp_path) as fake:
    with _running_cluster(fake, tmp_path) as (process, log):
      assert fake.stray_pids(), 'no task seen on the fake hosts'
      process.send_signal(signal.SIGTERM)
      code = process.wait(timeout=TEARDOWN_BOUND)
    # Checked at once: nothing may be left for the namespaces' removal.
    strays = fake.stray_pids()
  out = helpers.read(log)
  assert code == 130, out
  assert not strays, (strays, out)
  assert 'could not confirm' not in out, out
  # The interrupted tasks' records still came back over ssh.
  recs = helpers.records(str(tmp_path / 'records'))
  assert recs['worker1']['status'] == 'interrupted', recs['worker1']['status']


@pytest.mark.timeout(400)
def test_dropping_a_tasks_ssh_connection_tears_that_task_down(tmp_path):
  with fake_hosts(tmp_path) as fake:
    with _running_cluster(fake, tmp_path) as (process, log):
      _, task = fake.task_pid('worker', 1)
      ssh_client = helpers.task_pids(helpers.read(log))['worker1']
      os.kill(ssh_client, signal.SIGKILL)
      # The guard on the far side sees its channel end and stops the task.
      helpers.wait_for(lambda: not helpers.pid_alive(task), 20,
                       'worker1 to be stopped on its host')
      code = process.wait(timeout=TEARDOWN_BOUND)
    _assert_namespaces_empty(fake)
  out = helpers.read(log)
  assert code != 0, out
  assert re.search(r'First failure: worker1 \(ssh connection to %s lost' %
                   re.escape(fake.hosts[2].address), out), out


@pytest.mark.timeout(400)
def test_a_twenty_second_ssh_link_drop_leaves_the_run_and_its_records(
    tmp_path):
  """worker1's ssh connection silent for 20 s (its packets dropped on its
  host; the cluster's own traffic flows on): ssh keeps the connection (its
  keep-alives wait as long as a task may take to end by itself, no longer
  15 s), the run trains to its end, and every record comes home."""
  flags = helpers.tiny_flags(
      str(tmp_path / 'records'), variable_update='parameter_server',
      num_batches=300, display_every=10, stall_timeout=40,
      stall_shutdown_timeout=20)
  with fake_hosts(tmp_path) as fake:
    process = _launch(fake, tmp_path, fake.launcher_args() + [
        '--ps', '1', '--workers', '2'], flags, 'launch.log')
    log = str(tmp_path / 'launch.log')
    try:
      _wait_for_step(process, log, 'worker1', step=10)
      # worker1's host (ps0, worker0 and worker1 on hosts 0, 1 and 2).
      fake.block_ssh(fake.hosts[2], blocked=True)
      time.sleep(20)
      fake.block_ssh(fake.hosts[2], blocked=False)
      code = process.wait(timeout=240)
    finally:
      helpers.kill([process])
    _assert_namespaces_empty(fake)
  out = helpers.read(log)
  assert code == 0, out
  recs = helpers.records(str(tmp_path / 'records'))
  for label in ('worker0', 'worker1'):
    assert recs[label]['status'] == 'ok', out
  assert recs['worker1']['launched_on'] == fake.hosts[2].address, out
