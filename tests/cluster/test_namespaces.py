"""ps and workers on different "hosts": two network namespaces and a veth.

The ps runs in one namespace, the workers in another, each namespace with
its own address on a veth pair (10.200.1.1 and 10.200.1.2) made by the test
and removed after it. Nothing else is reachable from inside, so the tasks
can only talk over that link, as on separate machines. The ps is started by
hand with host flags, the workers with TF_CONFIG-form --cluster_spec files:
the README's "several hosts" recipe.
"""

import json

import pytest

from tests.cluster import helpers
from tests.cluster.netns import PS_ADDRESS
from tests.cluster.netns import WORKER_ADDRESS
from tests.cluster.netns import veth_namespaces

pytestmark = pytest.mark.cluster


@pytest.mark.timeout(180)
def test_ps_and_workers_in_separate_network_namespaces(tmp_path):
  ps_host = '%s:2222' % PS_ADDRESS
  workers = ['%s:2222' % WORKER_ADDRESS, '%s:2223' % WORKER_ADDRESS]
  flags = helpers.tiny_flags(tmp_path, variable_update='parameter_server')
  procs = []
  logs = {}
  with veth_namespaces() as (ps_ns, worker_ns):
    try:
      logs['ps0'] = str(tmp_path / 'ps0.log')
      procs.append(helpers.start(
          [helpers.SCRIPT] + flags + [
              '--job_name=ps', '--task_index=0', '--ps_hosts=' + ps_host,
              '--worker_hosts=' + ','.join(workers)],
          prefix=['ip', 'netns', 'exec', ps_ns], log_path=logs['ps0']))
      (tmp_path / 'specs').mkdir()
      for i in range(2):
        spec = tmp_path / 'specs' / ('tf_config_%d.json' % i)
        spec.write_text(json.dumps({
            'cluster': {'ps': [ps_host], 'worker': workers},
            'task': {'type': 'worker', 'index': i}}))
        logs['worker%d' % i] = str(tmp_path / ('worker%d.log' % i))
        procs.append(helpers.start(
            [helpers.SCRIPT] + flags + ['--cluster_spec=%s' % spec],
            prefix=['ip', 'netns', 'exec', worker_ns],
            log_path=logs['worker%d' % i]))
      codes = [p.wait(timeout=150) for p in procs]
    finally:
      helpers.kill(procs)
  outputs = {}
  for label, path in logs.items():
    with open(path) as f:
      outputs[label] = f.read()
  assert codes == [0, 0, 0], outputs
  assert 'ps0: every client is done; exiting' in outputs['ps0']
  assert 'serving at %s' % ps_host in outputs['ps0']
  for i in range(2):
    assert 'worker%d images/sec: ' % i in outputs['worker%d' % i]
  recs = helpers.records(str(tmp_path))
  # The record names the cluster the spec file described.
  assert recs['worker1']['config']['cluster'] == {'ps': [ps_host],
                                                   'worker': workers}
  assert len(helpers.step_losses(recs['worker0'])) == helpers.NUM_BATCHES
