#!/usr/bin/env python3
"""The penalty of `history`'s change points, calibrated: how often each
penalty factor shows a step in a flat history, and how often it finds a
planted one. Reproduces the table in results/history/change_points.py
(PENALTY_FACTOR).

  python studies/change_point_calibration.py [--seeds 200] [--quick]
      [--factors 2,4,6,8]

Synthetic series, as change_points.py describes them: 40 runs of one
configuration, each its own commit (nothing for a step to be snapped to),
throughput 1000 img/s times exp(0.02 z), z standard normal (2% run-to-run
noise, on the log scale the method works on):

  flat          no change at all;
  step 5%, 10%  runs 21..40 slower by that much (20 runs against 20).

Seed s (0 .. seeds-1) draws the noise of series s with
numpy.random.default_rng(s); every factor judges the same series. Each
series goes through what `history` does with it (change_points.find_steps:
PELT, the test of step 3, then Holm over the history's steps,
analysis.judge_steps).

  false step shown      a flat series with any step in the output (down,
                        up or unconfirmed);
  false step confirmed  one with a step down or up (what sets exit code 1,
                        for a step down);
  step found            a confirmed step down within FOUND_WITHIN runs of
                        the planted one.

--quick (20 seeds) checks the machinery in a few seconds; its figures are
too coarse to quote.
"""

import argparse
import os
import sys

import numpy as np
import pandas as pd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=g-import-not-at-top,wrong-import-position
from results import stats
from results.history import analysis
from results.history import change_points

RUNS = 40
NOISE_SD = 0.02
THROUGHPUT = 1000.0
STEP_AT = RUNS // 2
# A step found a run or two off the planted one is still the right answer
# for a reader looking for a commit range; further off, it is another step.
FOUND_WITHIN = 2
SCENARIOS = (('flat', 0.0), ('step 5%', 5.0), ('step 10%', 10.0))
FACTORS = (2.0, 4.0, 6.0, 8.0)
SEEDS, QUICK_SEEDS = 200, 20


def series(seed, step_pct):
  """One synthetic history: RUNS throughputs, slower by step_pct% from run
  STEP_AT on."""
  noise = np.random.default_rng(seed).standard_normal(RUNS)
  values = THROUGHPUT * np.exp(NOISE_SD * noise)
  values[STEP_AT:] *= 1.0 - step_pct / 100.0
  return values


def steps_of(values, factor):
  """The steps `history` would print for this one series."""
  found = change_points.find_steps(values, list(range(len(values))),
                                   penalty_factor=factor)
  history = [analysis.SeriesHistory(series=None, steps=found)]
  analysis.judge_steps(history, stats.DEFAULT_ALPHA,
                       change_points.MIN_STEP_PCT)
  return history[0].steps


def outcome(steps):
  confirmed = [s for s in steps if s.kind != change_points.UNCONFIRMED]
  return {
      'shown': bool(steps),
      'confirmed': bool(confirmed),
      'found': any(s.kind == change_points.STEP_DOWN
                   and abs(s.index - STEP_AT) <= FOUND_WITHIN
                   for s in confirmed)}


def calibrate(factors, seeds):
  """One row per factor: the rates over `seeds` series per scenario."""
  rows = []
  for factor in factors:
    row = {'factor': factor}
    for name, step_pct in SCENARIOS:
      outcomes = pd.DataFrame([outcome(steps_of(series(seed, step_pct),
                                                factor))
                               for seed in range(seeds)])
      if step_pct == 0:
        row['false step shown'] = outcomes['shown'].mean()
        row['false step confirmed'] = outcomes['confirmed'].mean()
      else:
        row['%s found' % name] = outcomes['found'].mean()
    rows.append(row)
  return pd.DataFrame(rows)


def formatted(table):
  shown = table.copy()
  shown['factor'] = shown['factor'].map('%g'.__mod__)
  for column in shown.columns[1:]:
    shown[column] = shown[column].map(lambda rate: '%.1f%%' % (100 * rate))
  return shown.to_string(index=False)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--seeds', type=int,
                      help='series per scenario (default %d; --quick %d)'
                      % (SEEDS, QUICK_SEEDS))
  parser.add_argument('--quick', action='store_true',
                      help='a few seconds\' check, not figures to quote')
  parser.add_argument('--factors', default=','.join('%g' % f for f in FACTORS),
                      help='penalty factors to try (default %(default)s)')
  args = parser.parse_args(argv)
  seeds = args.seeds or (QUICK_SEEDS if args.quick else SEEDS)
  factors = [float(f) for f in args.factors.split(',')]
  print('%d runs, %g%% noise, seeds 0..%d per scenario; step found: a '
        'confirmed step down within %d runs of run %d; the factor in use: '
        '%g' % (RUNS, 100 * NOISE_SD, seeds - 1, FOUND_WITHIN, STEP_AT + 1,
                change_points.PENALTY_FACTOR))
  print(formatted(calibrate(factors, seeds)))
  return 0


if __name__ == '__main__':
  sys.exit(main())
