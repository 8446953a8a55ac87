"""How much of the CPU *other* processes used while we measured something.

Benchmarks on a shared machine are only as good as the quiet they ran in.
The machine's busy CPU time minus this process's and its waited-for
children's CPU time (both from psutil) over a wall-clock window is the
share of the machine that somebody else used: 0.0 = we had it to ourselves,
0.5 = half of all cores were busy with other work. No TensorFlow here, so
scripts that only orchestrate can use it cheaply. Linux only (None
elsewhere).
"""

import os
import time

import psutil


def machine_busy_seconds():
  """CPU-seconds all processes have used since boot (None off Linux)."""
  if not psutil.LINUX:
    return None
  t = psutil.cpu_times()
  # Guest time is already inside user and nice, so it is not added again.
  return t.user + t.nice + t.system + t.irq + t.softirq + t.steal


def own_seconds():
  """CPU-seconds of this process and of the children it has waited for."""
  t = psutil.Process().cpu_times()
  return t.user + t.system + t.children_user + t.children_system


class OtherProcessesMeter:
  """``with OtherProcessesMeter() as m: ...`` then ``m.share`` (or None).

  Children must have been waited for (subprocess.run does) before the
  block ends, or their time counts as other processes'.
  """

  # None until measured: a block that never started (its enclosing phase
  # was stopped first) measured nothing.
  share = None

  def __enter__(self):
    self._wall = time.perf_counter()
    self._busy = machine_busy_seconds()
    self._own = own_seconds()
    self.share = None
    return self

  def __exit__(self, *exc):
    busy = machine_busy_seconds()
    if busy is None or self._busy is None:
      return
    wall = time.perf_counter() - self._wall
    others = (busy - self._busy) - (own_seconds() - self._own)
    capacity = wall * (os.cpu_count() or 1)
    if capacity > 0:
      self.share = max(0.0, others / capacity)


def other_share_now(window_sec=2.0):
  """Share of the machine others use now, sampled over ``window_sec``."""
  with OtherProcessesMeter() as meter:
    time.sleep(window_sec)
  return meter.share


def wait_until_quiet(max_share, window_sec=2.0, timeout_sec=900,
                     log=None):
  """Waits until others use at most ``max_share``; returns the last share
  seen (which may still be above it when ``timeout_sec`` ran out)."""
  deadline = time.monotonic() + timeout_sec
  while True:
    share = other_share_now(window_sec)
    if share is None or share <= max_share or time.monotonic() > deadline:
      return share
    if log:
      log('machine busy (others use %.0f%% of the CPU); waiting' %
          (100 * share))
    time.sleep(5)
