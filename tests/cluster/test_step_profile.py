"""benchmarks/step_profile.py on a tiny loopback cluster: it runs, and the
synchronous ps step sends each tensor across tasks once.

Counts, not times: the tensors a step sends between tasks (one RecvTensor
RPC each) come from the partitioned graph, the same on any machine. The
trivial model has 6 variables: each is read once by the worker (the weight
decay used to read it a second time), each gradient goes to the ps once,
plus four small tensors: the board's compute-time edge and value, its fed
seconds between steps, and the learning rate.
"""

import os
import re
import subprocess
import sys

import pytest

from tests.cluster import helpers
from tests.driver_helpers import REPO

pytestmark = pytest.mark.cluster


def _profile(sync_updates, model='trivial'):
  out = subprocess.run(
      [sys.executable, os.path.join(REPO, 'benchmarks', 'step_profile.py'),
       '--model=%s' % model, '--batch_size=2', '--num_batches=2',
       '--num_warmup_batches=1', '--sync_updates=%s' % sync_updates,
       '--timeout=150', '--', '--data_name=cifar10'],
      cwd=REPO, capture_output=True, text=True, timeout=170,
      env=helpers.child_env())
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  return out.stdout


@pytest.mark.timeout(400)
def test_sync_ps_step_sends_each_tensor_once():
  for sync_updates in ('mean', 'barrier'):
    text = _profile(sync_updates)
    rpcs = re.search(r'RPCs per step: (\d+) RunGraph .* \+ (\d+) RecvTensor',
                     text)
    assert rpcs, text
    # 15, and since 28 Nov the board's seconds between steps: fed on the
    # worker (the session's client), sent to the board on the ps.
    assert (int(rpcs.group(1)), int(rpcs.group(2))) == (1, 16), text
    assert re.search(r' 6 x variable read +/job:ps/task:0 -> '
                     r'/job:worker/task:0', text), text
    assert re.search(r' 6 x gradient +/job:worker/task:0 -> /job:ps/task:0',
                     text), text
    for section in ('Partitions (ops per step):', 'between steps',
                    'traced step:', 'longest ops'):
      assert section in text, text


@pytest.mark.timeout(300)
def test_batch_norm_statistics_are_updated_on_the_ps():
  # resnet20: 59 trainable variables and 19 batch norms. Each moving
  # statistic is updated beside it on the ps from the batch's statistic:
  # one tensor a statistic, and the moving statistics are never read by
  # the worker (they were: 38 more reads and 38 deltas sent back, 197
  # tensors a step instead of 159; 160 with the board's fed seconds
  # between steps).
  text = _profile('mean', model='resnet20')
  assert re.search(r' 59 x variable read +/job:ps/task:0 -> '
                   r'/job:worker/task:0', text), text
  assert re.search(r' 38 x batch-norm statistic +/job:worker/task:0 -> '
                   r'/job:ps/task:0', text), text
  assert re.search(r'\+ 160 RecvTensor', text), text
