"""A silent partition: the ps's link goes down mid-run, no reset is sent.

TensorFlow waits for such a peer for as long as you let it. Here the ps
runs in one network namespace and the workers in another (netns.py); once
training runs, the ps's end of the veth pair is set down. Every worker must
report the stall naming ps0 as unreachable and exit with code 4 (peer
unreachable), and the ps must give up on its unreachable clients.
"""

import time

import pytest

from tests.cluster import helpers
from tests.cluster import netns
from tf_cnn_benchmarks import exit_codes

pytestmark = pytest.mark.cluster


@pytest.mark.timeout(150)
def test_silent_partition_names_the_unreachable_ps(tmp_path):
  ps_host = '%s:2222' % netns.PS_ADDRESS
  workers = ['%s:%d' % (netns.WORKER_ADDRESS, 2222 + i) for i in range(2)]
  flags = helpers.tiny_flags(
      str(tmp_path), variable_update='parameter_server', num_batches=100000,
      display_every=50, stall_timeout=5, stall_shutdown_timeout=3) + [
          '--ps_hosts=' + ps_host, '--worker_hosts=' + ','.join(workers)]
  tasks = [('ps0', 'ps', 0), ('worker0', 'worker', 0),
           ('worker1', 'worker', 1)]
  logs, procs, codes = {}, [], {}
  with netns.veth_namespaces() as (ps_ns, worker_ns):
    try:
      for label, job, index in tasks:
        logs[label] = str(tmp_path / (label + '.log'))
        procs.append(helpers.start(
            [helpers.SCRIPT] + flags + ['--job_name=' + job,
                                        '--task_index=%d' % index],
            prefix=['ip', 'netns', 'exec',
                    ps_ns if job == 'ps' else worker_ns],
            log_path=logs[label]))
      helpers.wait_for(
          lambda: '\n50\t' in helpers.read(logs['worker1']) or any(
              p.poll() is not None for p in procs), 90, 'training')
      assert all(p.poll() is None for p in procs), {
          label: helpers.read(path) for label, path in logs.items()}
      netns.set_link(ps_ns, up=False)
      cut_at = time.monotonic()
      for (label, _, _), proc in zip(tasks, procs):
        codes[label] = proc.wait(timeout=60)
      took = time.monotonic() - cut_at
    finally:
      helpers.kill(procs)
  out = {label: helpers.read(path) for label, path in logs.items()}
  assert codes == {'ps0': exit_codes.RUN_FAILED,
                   'worker0': exit_codes.UNREACHABLE,
                   'worker1': exit_codes.UNREACHABLE}, out
  assert took < 40, out
  recs = helpers.records(str(tmp_path))
  for label in ('worker0', 'worker1'):
    assert 'Stall report from %s' % label in out[label], out[label]
    assert '  unreachable: ps0 (%s: ' % ps_host in out[label], out[label]
    assert 'Root cause: ps0 (PeerUnreachable)' in out[label], out[label]
    assert recs[label]['status'] == 'unreachable'
    assert recs[label]['failure']['task'] == 'ps0'
  assert 'left without saying done' in out['ps0'], out['ps0']
  for proc in procs:
    assert not helpers.pid_alive(proc.pid)
