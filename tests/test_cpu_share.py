"""cpu_share against real CPU burned by child processes.

The machine may be busy with other work while this runs, so every check is a
bound that such work can only make truer: the share others used is at least
what our unwaited child burned, never an exact value.
"""

import subprocess
import sys
import time

import psutil
import pytest

from tf_cnn_benchmarks.measure import cpu_share

# Burns CPU time, not wall time, so a contended machine burns the same amount.
BURN_CPU_SECONDS = ('import time\n'
                    'end = time.process_time() + %f\n'
                    'while time.process_time() < end: pass\n')
SPIN_FOREVER = 'while True: pass\n'
# Tick-sampled machine totals and per-process times disagree a little.
TICK_SLACK_SEC = 0.05

pytestmark = pytest.mark.skipif(not psutil.LINUX, reason='Linux only')


def _cpu_seconds(process):
  times = process.cpu_times()
  return times.user + times.system


def test_unwaited_child_counts_as_another_process():
  child = subprocess.Popen([sys.executable, '-c', SPIN_FOREVER])
  try:
    watched = psutil.Process(child.pid)
    time.sleep(0.2)   # past the interpreter's start-up
    with cpu_share.OtherProcessesMeter() as meter:
      child_start = _cpu_seconds(watched)
      time.sleep(1.5)
      child_burned = _cpu_seconds(watched) - child_start
  finally:
    child.kill()
    child.wait()
  assert child_burned > 0.2, 'the child hardly ran: %.2f s' % child_burned
  capacity = 1.5 * psutil.cpu_count()
  others = meter.share * capacity
  assert others >= 0.9 * child_burned - TICK_SLACK_SEC, (
      'others used %.2f CPU-s, the child alone %.2f' % (others, child_burned))


def test_waited_for_child_counts_as_our_own():
  own_before = cpu_share.own_seconds()
  busy_before = cpu_share.machine_busy_seconds()
  subprocess.run([sys.executable, '-c', BURN_CPU_SECONDS % 0.5], check=True)
  own = cpu_share.own_seconds() - own_before
  busy = cpu_share.machine_busy_seconds() - busy_before
  assert own >= 0.5 - TICK_SLACK_SEC
  assert busy >= 0.9 * own - TICK_SLACK_SEC


def test_wait_until_quiet_returns_the_share_it_saw():
  share = cpu_share.wait_until_quiet(max_share=float('inf'), window_sec=0.2)
  assert share >= 0.0
