"""Where did one configuration's throughput step up or down?

Method, on the runs of one series in order (ordering.py), one sample per run
(its `total images/sec`):

1. Change points: PELT (Killick, Fearnhead & Eckley 2012, "Optimal detection
   of changepoints with a linear computational cost", JASA 107:1590) from the
   `ruptures` library (Truong, Oudre & Vayatis 2020, Signal Processing
   167:107299), cost `l2` (a change in mean) on log images/sec, so a step is a
   ratio whatever the model's speed. Penalty per change point:
   PENALTY_FACTOR * sigma^2 * ln(n): three times the Schwarz/BIC penalty for
   a mean change with noise sigma (see PENALTY_FACTOR for why). sigma is
   estimated robustly from run-to-run differences (MAD of first differences
   / sqrt 2), so a few steps do not inflate it.
2. A change point inside a block (runs of one commit or one TF version) moves
   to whichever edge of the block fits better: nothing changed between two
   runs of the same commit.
3. Each change point is judged with results/stats.py on the runs either side
   (back to the previous change point, on to the next): size = Hodges-Lehmann
   % change, with the Mann-Whitney (Moses) interval at 1 - alpha. It is kept
   when |size| >= MIN_STEP_PCT and the test rejects at alpha, or when there
   are too few runs either side for the test to ever reject (then it is
   reported as unconfirmed). Otherwise the weakest is dropped, its neighbours
   merge, and the rest are judged again.
4. The steps kept in every series of a history are then one family
   (analysis.judge_steps): a step is down or up only when its Holm-adjusted
   p is below alpha; otherwise it is shown as unconfirmed.
"""

import dataclasses
import math

import numpy as np
import ruptures

from results import stats

# Steps smaller than this (in %, either way) are never reported: below it,
# run-to-run drift of a shared machine passes for a step. The same 2% is the
# regression threshold of `compare` (stats.DEFAULT_MIN_EFFECT_PCT).
MIN_STEP_PCT = stats.DEFAULT_MIN_EFFECT_PCT
# BIC would be 2 (ln(n) per parameter: the new mean and the position). But
# the test in step 3 judges the best split PELT could find, so its p-value is
# optimistic: with BIC, 13% of flat histories showed a confirmed false step.
# Measured by studies/change_point_calibration.py (40 runs, 2% noise, seeds
# 0..199 per scenario; steps 3 and 4 included; found: a confirmed step down
# within 2 runs of the planted one, 20 runs against 20), as it printed:
#   factor  false step shown  false step confirmed  5% found  10% found
#      2          14.5%              13.0%            97.0%     100.0%
#      4           2.0%               1.5%            96.0%     100.0%
#      6           1.0%               0.5%            95.0%     100.0%
#      8           0.0%               0.0%            92.0%     100.0%
# 6: false steps rare, while a 5% step is still found 95% of the time.
PENALTY_FACTOR = 6.0
# A change point needs this many runs on each side before it is snapped.
MIN_RUNS_PER_SEGMENT = 2
# Noise floor (log scale) so identical synthetic values do not make the
# penalty zero.
MIN_NOISE_SD = 1e-4
# 1 / Phi^-1(3/4): scales a median absolute deviation to a standard deviation.
MAD_TO_SD = 1.4826

STEP_DOWN = 'down'
STEP_UP = 'up'
UNCONFIRMED = 'unconfirmed'

METHOD_TEXT = (
    'change points: PELT (ruptures, l2 cost) on log images/sec, penalty '
    '%g*sigma^2*ln(n) with sigma from run-to-run differences; a step is kept '
    'when it is at least %g%% and the two-sided Mann-Whitney test of the runs '
    'either side gives p < alpha = %g, after Holm\'s adjustment over every '
    'step of the history (unconfirmed: too few runs to test, or not below '
    'alpha once adjusted). Size: Hodges-Lehmann estimate with the '
    'Mann-Whitney %g%% interval.')


@dataclasses.dataclass(frozen=True)
class Step:
  start: int        # first run of the segment before the step
  index: int        # first run after the step
  end: int          # one past the last run of the segment after it
  result: object    # stats.ShiftComparison, after against before

  @property
  def kind(self):
    if self.result.verdict == stats.REGRESSION:
      return STEP_DOWN
    if self.result.verdict == stats.IMPROVEMENT:
      return STEP_UP
    return UNCONFIRMED


def method_text(alpha=stats.DEFAULT_ALPHA, min_step_pct=MIN_STEP_PCT):
  return METHOD_TEXT % (PENALTY_FACTOR, min_step_pct, alpha,
                        100 * (1 - alpha))


def noise_sd(log_values):
  """Robust noise estimate: a step moves one difference, not the median."""
  differences = np.diff(log_values)
  if len(differences) == 0:
    return MIN_NOISE_SD
  sd = MAD_TO_SD * float(np.median(np.abs(differences))) / math.sqrt(2.0)
  return max(sd, MIN_NOISE_SD)


def _segment_cost(values):
  return float(np.sum((values - values.mean()) ** 2)) if len(values) else 0.0


def _snap(breaks, blocks, log_values):
  """Moves each break that splits a block to the better edge of it."""
  n = len(log_values)
  snapped = []
  for position, index in enumerate(breaks):
    if blocks[index - 1] != blocks[index]:
      snapped.append(index)
      continue
    low = index
    while low > 0 and blocks[low - 1] == blocks[index]:
      low -= 1
    high = index
    while high < n and blocks[high] == blocks[index]:
      high += 1
    left = snapped[-1] if snapped else 0
    right = breaks[position + 1] if position + 1 < len(breaks) else n
    costs = {}
    for candidate in (low, high):
      if left < candidate < right:
        costs[candidate] = (_segment_cost(log_values[left:candidate])
                            + _segment_cost(log_values[candidate:right]))
    if costs:
      snapped.append(min(costs, key=lambda c: (costs[c], c)))
  return sorted(set(snapped))


def _kept(result, min_step_pct):
  if abs(result.change_pct) < min_step_pct:
    return False
  return result.verdict in (stats.REGRESSION, stats.IMPROVEMENT,
                            stats.INCONCLUSIVE)


def _judge(breaks, throughputs, alpha, min_step_pct):
  edges = [0] + list(breaks) + [len(throughputs)]
  return [Step(start=edges[i - 1], index=edges[i], end=edges[i + 1],
               result=stats.compare_throughput(
                   throughputs[edges[i - 1]:edges[i]],
                   throughputs[edges[i]:edges[i + 1]], alpha, min_step_pct))
          for i in range(1, len(edges) - 1)]


def candidate_breaks(throughputs, blocks, penalty_factor=PENALTY_FACTOR):
  """PELT's change points (indices of the first run after each), snapped
  to block edges; before any judging. penalty_factor: other values only
  to calibrate it (studies/change_point_calibration.py)."""
  log_values = np.log(np.asarray(throughputs, dtype=float))
  n = len(log_values)
  if n < 2 * MIN_RUNS_PER_SEGMENT:
    return []
  penalty = penalty_factor * noise_sd(log_values) ** 2 * math.log(n)
  detector = ruptures.Pelt(model='l2', min_size=MIN_RUNS_PER_SEGMENT, jump=1)
  breaks = detector.fit(log_values.reshape(-1, 1)).predict(pen=penalty)[:-1]
  return _snap(breaks, blocks, log_values)


def find_steps(throughputs, blocks, alpha=stats.DEFAULT_ALPHA,
               min_step_pct=MIN_STEP_PCT, penalty_factor=PENALTY_FACTOR):
  """Steps of one series (throughputs in order; blocks[i]: what run i's
  step cannot split). Returns a list of Step, in order."""
  throughputs = np.asarray(throughputs, dtype=float)
  if np.any(throughputs <= 0):
    raise ValueError('throughputs must be positive')
  breaks = candidate_breaks(throughputs, blocks, penalty_factor)
  while True:
    steps = _judge(breaks, throughputs, alpha, min_step_pct)
    weak = [step for step in steps if not _kept(step.result, min_step_pct)]
    if not weak:
      return steps
    weakest = max(weak, key=lambda step: (step.result.p_value,
                                          -abs(step.result.change_pct)))
    breaks = [index for index in breaks if index != weakest.index]
