#!/usr/bin/env python3
"""Every side-by-side measurement of a configuration, pooled.

  python benchmarks/vs_original_pooled.py [--pairs_csv=CSV] [--latest]

A configuration measured twice at one commit (say 5 pairs, then 10 more
because the first median came out below 1.0) has one answer: all 15 pairs
together. Quoting the second run alone would be re-running only the rows
that disappoint until they do not. This script is where PERFORMANCE.md's
pooled rows come from.

CSV (default benchmarks/data/vs_original_pairs.csv) holds one row per pair:
harness (the commit measured), date, configuration, variant (flags beyond
the configuration's defaults), run (one invocation of vs_original.py),
pair, ratio (ours/original) and a note. `vs_original.py --pairs_csv=CSV`
appends its pairs; the older rows are transcribed from PERFORMANCE.md's
tables (tests/test_performance_doc.py checks that every pair ratio printed
there is in the file, and that the pooled table there is this script's).

For each (harness, configuration, variant), in the order the harnesses
first appear in the file (oldest first): the runs and pairs pooled, the
median pair ratio, the Hodges-Lehmann estimate of the ratio with its 95%
interval and the two-sided Wilcoxon signed-rank p-value on the log ratios
(results/stats.py, the test `compare` uses), and how many pairs were below
1.0. --latest keeps each configuration's newest harness only.
"""

import argparse
import math
import os
import sys

import pandas as pd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from results import stats  # pylint: disable=g-import-not-at-top

DEFAULT_CSV = os.path.join(REPO, 'benchmarks', 'data',
                           'vs_original_pairs.csv')
COLUMNS = ('harness', 'date', 'configuration', 'variant', 'run', 'pair',
           'ratio', 'note')


def read_pairs(path):
  """The pairs of ``path`` as a DataFrame, every column but ratio text."""
  table = pd.read_csv(path, dtype=str, keep_default_na=False)
  missing = [c for c in COLUMNS if c not in table.columns]
  if missing:
    raise ValueError('%s lacks the column(s) %s; its header must be %s.' % (
        path, ', '.join(missing), ','.join(COLUMNS)))
  table['ratio'] = table['ratio'].astype(float)
  return table


def pool(table):
  """One row per (harness, configuration, variant), oldest harness first."""
  harness_order = {h: i for i, h in enumerate(pd.unique(table['harness']))}
  rows = []
  for (harness, configuration, variant), group in table.groupby(
      ['harness', 'configuration', 'variant'], sort=False):
    ratios = group['ratio'].to_numpy()
    shift, low, high, p_value, _, _ = stats.wilcoxon_signed_rank(
        [math.log(r) for r in ratios])
    rows.append({
        'configuration': configuration, 'variant': variant,
        'harness': harness, 'order': harness_order[harness],
        'runs': group['run'].nunique(), 'pairs': len(ratios),
        'median': float(pd.Series(ratios).median()),
        'estimate': math.exp(shift), 'low': math.exp(low),
        'high': math.exp(high), 'p': p_value,
        'below_1': int((ratios < 1.0).sum())})
  pooled = pd.DataFrame(rows)
  return pooled.sort_values(['configuration', 'variant', 'order'],
                            kind='stable').reset_index(drop=True)


def latest(pooled):
  """Each configuration (and variant) at its newest harness."""
  return pooled.loc[pooled.groupby(['configuration', 'variant'])[
      'order'].idxmax()].reset_index(drop=True)


def markdown(pooled):
  lines = ['| configuration | harness | runs | pairs | median of the pairs | '
           'estimate (95% interval) | below 1.0 | Wilcoxon p |',
           '|---|---|---|---|---|---|---|---|']
  for row in pooled.itertuples():
    name = '`%s`' % row.configuration + (' `%s`' % row.variant
                                         if row.variant else '')
    # Too few pairs (5 cannot reach p < 0.05) leave the interval unbounded.
    interval = ('%.3f–%.3f' % (row.low, row.high)
                if 0 < row.low and math.isfinite(row.high) else 'unbounded')
    lines.append('| %s | %s | %d | %d | %.2f× | %.3f× (%s) | %d | %s |' % (
        name, row.harness, row.runs, row.pairs, row.median, row.estimate,
        interval, row.below_1, '%.3f' % row.p if row.p >= 0.001 else
        '< 0.001'))
  return '\n'.join(lines)


def main(argv):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument('--pairs_csv', default=DEFAULT_CSV)
  p.add_argument('--latest', action='store_true',
                 help="each configuration's newest harness only")
  args = p.parse_args(argv)
  try:
    pooled = pool(read_pairs(args.pairs_csv))
  except (OSError, ValueError) as e:
    print('vs_original_pooled.py: cannot pool %s: %s' % (args.pairs_csv, e),
          file=sys.stderr)
    return 2
  print(markdown(latest(pooled) if args.latest else pooled))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
