"""The field case at scale: 16 workers + 3 ps, time-based checkpoints.

The original, when one worker of such a cluster died, left its chief
printing "Saving checkpoint" every 10 s until someone killed it. Here one
worker is SIGKILLed mid-run; the chief must stop saving at once and every
task must exit naming that worker, within a bound.
"""

import glob
import os
import re
import signal

import pytest

from tests.cluster import helpers
from tf_cnn_benchmarks import exit_codes

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

NUM_WORKERS = 16
NUM_PS = 3
VICTIM = 'worker7'


def _checkpoint_times(train_dir):
  """Modification times of every checkpoint index written."""
  return sorted(os.path.getmtime(p) for p in
                glob.glob(os.path.join(train_dir, 'model.ckpt-*.index')))


@pytest.mark.timeout(300)
def test_sixteen_workers_one_killed_chief_stops_saving(tmp_path):
  train_dir = str(tmp_path / 'train')
  def training_and_saving(process, log):
    # Every worker trains, and the chief has saved a few times.
    pids = helpers.wait_until_step(process, log, 'worker%d' % (
        NUM_WORKERS - 1), 5, timeout=200)
    helpers.wait_for(lambda: len(_checkpoint_times(train_dir)) >= 2, 60,
                     'two time-based checkpoints')
    return pids

  run = helpers.run_with_fault(
      tmp_path, training_and_saving,
      lambda process, pids: os.kill(pids[VICTIM], signal.SIGKILL), 90,
      workers=NUM_WORKERS, ps=NUM_PS, batch_size=1, display_every=5,
      startup_timeout=240, stall_timeout=60, train_dir=train_dir,
      save_model_secs=2)
  output, pids, killed_at = run.output, run.pids, run.fault_time
  assert run.code == exit_codes.RUN_FAILED, output
  assert run.took < 45, output
  assert 'First failure: %s was killed by SIGKILL' % VICTIM in output
  # The chief stopped saving: at most the save already under way when the
  # worker died finished after it.
  late = [t for t in _checkpoint_times(train_dir) if t > killed_at + 0.5]
  assert len(late) <= 1, (late, killed_at)
  # Every task names the worker.
  recs = helpers.records(str(tmp_path))
  for i in range(NUM_WORKERS):
    label = 'worker%d' % i
    if label == VICTIM:
      continue
    lines = helpers.task_lines(output, label)
    assert 'Root cause: %s (PeerGone)' % VICTIM in lines, (label, lines)
    assert recs[label]['status'] == 'failed'
    assert recs[label]['failure']['task'] == VICTIM
  for i in range(NUM_PS):
    lines = helpers.task_lines(output, 'ps%d' % i)
    assert any(re.search(r'exiting: %s left without saying done' % VICTIM,
                         l) for l in lines), lines
  helpers.assert_no_orphans(pids)
  helpers.assert_checkpoint_restores(train_dir)
