"""Stragglers: workers alive but slower than the rest, named by the chief.

The chief's watchdog reads the progress board once a second anyway
(cluster_watch.py); this module judges those readings, with no call of
its own. What distinguishes a slow worker:

* Synchronous training: every worker's step counts advance together, at
  the slowest worker's pace, so rates say nothing. Two things differ:
  - Slowness between steps (the worker's own loop, a host that schedules
    it late): the others enter the next step at once and wait inside it
    for the straggler, which is still between steps. Each worker times
    its own gaps between steps and the board sums them
    (``between_seconds``, fed into the step's own run, or the run that
    publishes its start): the others wait inside the step while worker i
    is between steps, so a step of wall time T in which it spends e more
    than the median of the others' gaps would take T - e without it: its
    slowdown is T / (T - e). (Work a task names between steps, the
    chief's checkpoint saves, is not in its gaps: runtime.doing.)
    Measured on a loopback cluster (1 ps, 3 workers, worker2 slowed 3x by
    the 'slow' test fault): 3.06x; the share-based estimate this replaced
    (1 / (1 - share) over the others') read 3.1x, and 3.1x with two busy
    loops beside it. (Counting how often a reading found the worker not
    yet in the newest step was tried first: a 3x lag read 3-4x on a quiet
    machine but 8.75x and 19.3x in CI runs, as the chief's readings come
    late while its own process computes and so over-sample the others'
    wait.)
  - Slowness inside the step (slow compute: a slower machine, a noisy
    neighbour): the worker enters each step with the others, and started
    and completed cannot tell it from the workers waiting for it. The
    board's ``compute_seconds`` can: each step adds the time from its
    run's start to this worker's hand-over of its gradients (in the same
    run: no extra call), so seconds per step is each worker's own compute,
    without the wait for the others. Measured (worker2's compute slowed
    3x by the 'slow_compute' test fault): 2.8x. (Sampling who was still
    computing at each reading was tried first and put it at 8-18x: the
    chief's readings come late while its own process is busy computing,
    so they over-sample the wait.) Only the modes whose step hands
    gradients over before waiting time it: synchronous parameter_server
    and distributed_replicated (with --variable_consistency=relaxed too:
    the previous step's gradients are pushed only once this step's are
    stored, all_reduce.Deferred, so the hand-over follows the compute). In
    collective_all_reduce the all-reduce is the wait, with no hand-over
    point, so only the time between steps is judged;
    distributed_all_reduce has one client and nobody to compare.
  A worker's slowdown is the larger of the two: its compute per step over
  the median of the others', and T / (T - e) for its gaps beyond theirs.
* Asynchronous training: each worker steps at its own rate; the slowdown
  is the median of the others' rates over its own.

A worker is named when its slowdown stays at or above THRESHOLD over a
whole window of readings: once, and again if it gets worse by
WORSE_FACTOR. It is not a failure: the run goes on.
"""

import collections
import dataclasses
import statistics
from typing import Callable, List, Optional

# Readings (about one a second) a slowdown is judged over.
WINDOW = 20
# Slowdown (against the other workers: module docstring) that is reported.
THRESHOLD = 2.0
# A reported straggler is reported again once its slowdown grew this much.
WORSE_FACTOR = 1.5
# Readings kept for the estimate of a named straggler (it sharpens with
# more readings).
_HISTORY = 600
# A worker between steps all the time has no finite estimate; cap it.
_MAX_LAG_FRACTION = 0.95


@dataclasses.dataclass
class Straggler:
  task: str
  slowdown: float
  first_step: int  # the worker's completed steps when it was first named
  last_step: int   # ... at the latest reading that still found it slow
  since: int       # index (in all readings) where its slow window began

  def as_dict(self):
    return {'task': self.task, 'slowdown': round(self.slowdown, 2),
            'steps': [self.first_step, self.last_step]}

  def line(self, again):
    return ('Straggler: %s is %.1fx slower than the median of the other '
            'workers (since its step %d)%s; training goes on.' % (
                self.task, self.slowdown, self.first_step,
                ', worse than first reported' if again else ''))


class StragglerWatch:
  """Fed every board reading (``take``); reports through ``report(line,
  found)``: ``found`` is every straggler so far (dicts, for the record),
  ``line`` what to print, or None when only the estimates changed."""

  def __init__(self, labels, lockstep,
               report: Callable[[str, List[dict]], None]):
    self.labels = list(labels)
    self.lockstep = lockstep
    self._report = report
    # One entry per reading that saw progress: per client (None: left),
    # (steps completed, compute seconds so far, seconds between steps so
    # far).
    self._readings = collections.deque(maxlen=_HISTORY)
    self._times = collections.deque(maxlen=_HISTORY)
    self._count = 0  # readings taken, ever
    self._previous = None
    self.found = collections.OrderedDict()  # task -> Straggler
    self._reported = {}  # task -> slowdown last reported

  def take(self, snapshot, now):
    if len(self.labels) < 2:
      return
    previous, self._previous = self._previous, snapshot
    # Only readings of a moving cluster count: a stalled one is the stall
    # detector's business, and a lag frozen in place is not a rate.
    if previous is None or snapshot.completed == previous.completed:
      return
    running = [i for i in range(len(self.labels)) if not snapshot.left(i)]
    if len(running) < 2:
      return
    compute = snapshot.compute_seconds or (0.0,) * len(self.labels)
    between = snapshot.between_seconds or (0.0,) * len(self.labels)
    reading = tuple(
        (snapshot.completed[i], compute[i], between[i])
        if i in running else None for i in range(len(self.labels)))
    self._readings.append(reading)
    self._times.append(now)
    self._count += 1
    if len(self._readings) >= WINDOW:
      self._judge(snapshot)

  def _slowdowns(self, first):
    """{client index: slowdown} over the readings from ``first`` (an index
    into all readings) on."""
    start = max(0, len(self._readings) - (self._count - first))
    readings = list(self._readings)[start:]
    times = list(self._times)[start:]
    # Each measure: {client index: its cost}, compared with the others'.
    compute_costs, rate_costs = {}, {}
    gaps = {}  # client index: (seconds between steps, wall seconds) a step
    for i in range(len(self.labels)):
      column = [r[i] for r in readings]
      if any(c is None for c in column) or len(column) < 2:
        continue
      completed, compute, between = zip(*column)
      steps = completed[-1] - completed[0]
      if steps <= 0:
        continue  # not moving: a stall, not a straggler
      elapsed = times[-1] - times[0]
      if not self.lockstep:
        rate_costs[i] = elapsed / steps
        continue
      if elapsed > 0:
        gaps[i] = ((between[-1] - between[0]) / steps, elapsed / steps)
      if compute[-1] > compute[0]:  # the step times its compute
        compute_costs[i] = (compute[-1] - compute[0]) / steps
    slowdowns = {}
    # Between steps: the cluster's step (the wall time a step, the same
    # for all in lockstep) waits for a worker's gap beyond the others'
    # typical one; without that excess it would take that much less.
    # (Dividing 1 / (1 - share) by the others' over-reads when their own
    # gaps are not ~0: 0.8 s of a 1 s step against their 0.3 s is 2x, not
    # 3.5x.)
    for i, (gap, step) in gaps.items():
      others = [g for j, (g, _) in gaps.items() if j != i]
      if others:
        excess = min(max(0.0, gap - statistics.median(others)),
                     _MAX_LAG_FRACTION * step)
        slowdowns[i] = step / (step - excess)
    for costs in (compute_costs, rate_costs):
      for i, cost in costs.items():
        others = [c for j, c in costs.items() if j != i]
        if others:
          slowdowns[i] = max(slowdowns.get(i, 0.0),
                             cost / statistics.median(others))
    return slowdowns

  def _judge(self, snapshot):
    window_start = self._count - WINDOW
    changed = False
    for i, slowdown in self._slowdowns(window_start).items():
      task = self.labels[i]
      known = self.found.get(task)
      if slowdown < THRESHOLD:
        continue
      if known is None:
        known = Straggler(task, slowdown, snapshot.completed[i],
                          snapshot.completed[i], window_start)
        self.found[task] = known
      else:
        # Named already: the estimate over every reading since.
        known.slowdown = self._slowdowns(known.since).get(i, slowdown)
        known.last_step = snapshot.completed[i]
      changed = True
      last = self._reported.get(task)
      if last is None or known.slowdown >= WORSE_FACTOR * last:
        self._reported[task] = known.slowdown
        self._report(known.line(last is not None), self.reported())
        changed = False
    if changed:
      self._report(None, self.reported())

  def reported(self) -> List[dict]:
    return [s.as_dict() for s in self.found.values()]


def watch_for(role, labels, report) -> Optional[StragglerWatch]:
  """The chief's StragglerWatch (None on every other task)."""
  if not role.is_chief or report is None:
    return None
  return StragglerWatch(labels, role.lockstep, report)
