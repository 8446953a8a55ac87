"""The field case at scale: 16 workers + 3 ps, time-based checkpoints.

The original, when one worker of such a cluster died, left its chief
printing "Saving checkpoint" every 10 s until someone killed it. Here one
worker is SIGKILLed mid-run; the chief must stop saving at once and every
task must exit by itself naming that worker, within a bound: with 19
processes on a small host the survivors notice more slowly than a small
cluster's, and the launcher must not stop them first (that would turn
their own record of the lost worker into "interrupted").
"""

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


@pytest.mark.timeout(300)
def test_sixteen_workers_one_killed_chief_stops_saving(tmp_path):
  train_dir = str(tmp_path / 'train')
  with helpers.CheckpointSaves(train_dir) as saves:
    def training_and_saving(process, log):
      # Every worker trains, and the chief has saved a few times.
      pids = helpers.wait_until_step(process, log, 'worker%d' % (
          NUM_WORKERS - 1), 5, timeout=200)
      helpers.wait_for(lambda: len(saves.times) >= 2, 60,
                       'two time-based checkpoints')
      return pids

    run = helpers.run_with_fault(
        tmp_path, training_and_saving,
        lambda process, pids: os.kill(pids[VICTIM], signal.SIGKILL), 90,
        workers=NUM_WORKERS, ps=NUM_PS, batch_size=1, display_every=5,
        startup_timeout=240, stall_timeout=60, train_dir=train_dir,
        save_model_secs=2)
  output, pids, killed_at = run.output, run.pids, run.fault_time
  assert run.code == exit_codes.RUN_FAILED, helpers.end_first(output)
  assert run.took < 45, output
  assert 'First failure: %s was killed by SIGKILL' % VICTIM in output
  # The chief stopped saving: at most the save already under way when the
  # worker died finished after it.
  assert saves.after(killed_at) <= 1, (saves.times, killed_at)
  # Every task ended by itself, before the launcher's grace ran out.
  helpers.assert_ended_by_themselves(output)
  # Every task names the worker, in its own words and record.
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
