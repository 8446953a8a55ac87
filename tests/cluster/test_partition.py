"""Network partitions: the ps's link goes down mid-run, no reset is sent.

TensorFlow waits for such a peer for as long as you let it. Here the ps
runs in one network namespace and the workers in another (netns.py); once
training runs, the ps's end of the veth pair is set down.

  * Healed within the stall bound: the run must simply go on. Every task
    (the ps too: it must wait for its clients as long as they wait for it)
    ends with 0 and the training continued after the heal.
  * Never healed: every task must say a peer is unreachable, a partition,
    not a crash, and exit with 4 (peer unreachable) within its bound.
"""

import re
import time

import pytest

from tests.cluster import helpers
from tests.cluster import netns
from tf_cnn_benchmarks import exit_codes

pytestmark = pytest.mark.cluster

PS_HOST = '%s:2222' % netns.PS_ADDRESS
WORKER_HOSTS = ['%s:%d' % (netns.WORKER_ADDRESS, 2222 + i) for i in range(2)]
TASKS = [('ps0', 'ps', 0), ('worker0', 'worker', 0), ('worker1', 'worker', 1)]
# Steps shown before the link is cut.
CUT_AT_STEP = 50


def _start(tmp_path, ps_ns, worker_ns, **overrides):
  """Starts ps0 in ``ps_ns`` and two workers in ``worker_ns``; returns
  ({label: log path}, [process in TASKS order])."""
  flags = helpers.tiny_flags(
      str(tmp_path), variable_update='parameter_server', **overrides) + [
          '--ps_hosts=' + PS_HOST, '--worker_hosts=' + ','.join(WORKER_HOSTS)]
  logs, procs = {}, []
  for label, job, index in TASKS:
    logs[label] = str(tmp_path / (label + '.log'))
    procs.append(helpers.start(
        [helpers.SCRIPT] + flags + ['--job_name=' + job,
                                    '--task_index=%d' % index],
        prefix=['ip', 'netns', 'exec', ps_ns if job == 'ps' else worker_ns],
        log_path=logs[label]))
  return logs, procs


# --stall_timeout and --stall_shutdown_timeout of the runs whose partition
# never heals: short, so the tasks soon end.
NEVER_HEALS_BOUNDS = (5, 3)


def _start_until_it_never_heals(tmp_path, ps_ns, worker_ns):
  """_start for a run that trains until the partition ends it."""
  stall_timeout, shutdown = NEVER_HEALS_BOUNDS
  return _start(tmp_path, ps_ns, worker_ns, num_batches=100000,
                display_every=50, stall_timeout=stall_timeout,
                stall_shutdown_timeout=shutdown)


def _last_step(log_path):
  """The last training step a worker displayed (0 before the first)."""
  steps = re.findall(r'^(\d+)\t', helpers.read(log_path), re.M)
  return int(steps[-1]) if steps else 0


def _outputs(logs):
  return {label: helpers.read(path) for label, path in logs.items()}


def _shown(out):
  """Every task's output as one text: a failed assertion shows all of it
  (pytest cuts a dict's repr short, and CI's output is all we get)."""
  return '\n'.join('==== %s ====\n%s' % item for item in sorted(out.items()))


def _wait_until_training(logs, procs):
  helpers.wait_for(
      lambda: _last_step(logs['worker1']) >= CUT_AT_STEP or any(
          p.poll() is not None for p in procs), 120, 'training')
  assert all(p.poll() is None for p in procs), _outputs(logs)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_partition_that_heals_within_the_stall_bound_lets_the_run_go_on(
    tmp_path):
  # Down for longer than a ps used to wait for its clients (10 s), well
  # within --stall_timeout.
  down_for = 16
  num_batches = 400
  codes = {}
  with netns.veth_namespaces() as (ps_ns, worker_ns):
    logs, procs = _start(tmp_path, ps_ns, worker_ns, num_batches=num_batches,
                         display_every=10, stall_timeout=40,
                         stall_shutdown_timeout=20)
    try:
      _wait_until_training(logs, procs)
      netns.set_link(ps_ns, up=False)
      step_at_cut = _last_step(logs['worker0'])
      time.sleep(down_for)
      step_at_heal = _last_step(logs['worker0'])
      alive_at_heal = {label: p.poll() is None
                       for (label, _, _), p in zip(TASKS, procs)}
      netns.set_link(ps_ns, up=True)
      for (label, _, _), proc in zip(TASKS, procs):
        codes[label] = proc.wait(timeout=150)
    finally:
      helpers.kill(procs)
  out = _outputs(logs)
  assert alive_at_heal == {'ps0': True, 'worker0': True,
                           'worker1': True}, _shown(out)
  assert codes == {'ps0': exit_codes.OK, 'worker0': exit_codes.OK,
                   'worker1': exit_codes.OK}, '%s\n%s' % (codes, _shown(out))
  # The partition really held the training up, and it went on after.
  assert step_at_heal < step_at_cut + 20, '%d %d\n%s' % (
      step_at_cut, step_at_heal, _shown(out))
  assert step_at_cut < num_batches, _shown(out)
  recs = helpers.records(str(tmp_path))
  for label in ('worker0', 'worker1'):
    assert _last_step(logs[label]) == num_batches, out[label]
    assert recs[label]['status'] == 'ok', recs[label]
    assert 'Stall report' not in out[label], out[label]
  assert 'every client is done' in out['ps0'], out['ps0']


@pytest.mark.timeout(240)
def test_a_partition_that_never_heals_is_reported_as_one_by_every_task(
    tmp_path):
  stall_timeout, shutdown = NEVER_HEALS_BOUNDS
  codes, took = {}, {}
  with netns.veth_namespaces() as (ps_ns, worker_ns):
    logs, procs = _start_until_it_never_heals(tmp_path, ps_ns, worker_ns)
    try:
      _wait_until_training(logs, procs)
      netns.set_link(ps_ns, up=False)
      cut_at = time.monotonic()
      while len(codes) < len(TASKS) and time.monotonic() - cut_at < 150:
        for (label, _, _), proc in zip(TASKS, procs):
          if label not in codes and proc.poll() is not None:
            codes[label] = proc.returncode
            took[label] = time.monotonic() - cut_at
        time.sleep(0.2)
    finally:
      helpers.kill(procs)
  out = _outputs(logs)
  assert codes == {'ps0': exit_codes.UNREACHABLE,
                   'worker0': exit_codes.UNREACHABLE,
                   'worker1': exit_codes.UNREACHABLE}, '%s\n%s' % (
                       codes, _shown(out))
  # The workers end after the stall bound; the ps waits for them as long
  # as a worker's step may wait (deadlines.step_deadline_seconds: the
  # stall bound plus a 30 s margin), not longer. Slack for a loaded host.
  worker_bound = stall_timeout + shutdown
  assert max(took['worker0'], took['worker1']) < worker_bound + 30, (
      '%s\n%s' % (took, _shown(out)))
  # (The ps last heard from the workers up to a probe period before the
  # cut.)
  assert worker_bound + 30 - 3 <= took['ps0'] < worker_bound + 30 + 25, (
      '%s\n%s' % (took, _shown(out)))
  recs = helpers.records(str(tmp_path))
  for label in ('worker0', 'worker1'):
    assert 'Stall report from %s' % label in out[label], out[label]
    assert '  unreachable: ps0 (%s: ' % PS_HOST in out[label], out[label]
    assert 'Root cause: ps0 (PeerUnreachable)' in out[label], out[label]
    assert 'network partition' in out[label], out[label]
    assert 'crashed' not in out[label], out[label]
    assert recs[label]['status'] == 'unreachable'
    assert recs[label]['failure']['task'] == 'ps0'
  for worker in ('worker0', 'worker1'):
    assert re.search(r'unreachable.*%s' % worker, out['ps0']), out['ps0']
  assert 'network partition' in out['ps0'], out['ps0']
  assert 'not a crash' in out['ps0'], out['ps0']
  assert 'crashed' not in out['ps0'], out['ps0']
  # Its own link is the one down: it names itself, as the workers name it.
  assert ("ps0: exiting: ps0's host has no route to worker0 " in out['ps0']
          and 'so ps0 is the task cut off' in out['ps0']), out['ps0']
  # Every task spans two hosts: each warns once that its server is open.
  for label in out:
    assert out[label].count('trusted network only') == 1, out[label]
  for proc in procs:
    assert not helpers.pid_alive(proc.pid)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_workers_whose_own_link_is_down_name_themselves(tmp_path):
  """The workers' end of the pair goes down: their host has no route to
  the ps any more, so they are the ones cut off, and each says so and
  names itself (the ps's own link is fine). Only the workers' words are
  checked; the ps is stopped once they have left."""
  codes = {}
  with netns.veth_namespaces() as (ps_ns, worker_ns):
    logs, procs = _start_until_it_never_heals(tmp_path, ps_ns, worker_ns)
    try:
      _wait_until_training(logs, procs)
      netns.set_link(worker_ns, up=False)
      helpers.wait_for(
          lambda: all(p.poll() is not None for p in procs[1:]), 90,
          'the workers to leave')
      codes = {label: proc.returncode
               for (label, _, _), proc in zip(TASKS[1:], procs[1:])}
    finally:
      helpers.kill(procs)
  out = _outputs(logs)
  assert codes == {'worker0': exit_codes.UNREACHABLE,
                   'worker1': exit_codes.UNREACHABLE}, '%s\n%s' % (
                       codes, _shown(out))
  recs = helpers.records(str(tmp_path))
  for label in ('worker0', 'worker1'):
    assert ("%s's host has no route to " % label in out[label] and
            'so %s is the task cut off' % label in out[label]), out[label]
    assert 'Root cause: %s (CutOff)' % label in out[label], out[label]
    assert recs[label]['status'] == 'unreachable'
    assert recs[label]['failure']['task'] == label
