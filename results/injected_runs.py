"""Runs slowed on purpose (tf_cnn_benchmarks/test_hooks/injected_slowdown.py)
among the runs being compared: refused unless asked for, and named in the
table.

Their record's `injected_slowdown` is the fraction of each step's time the
run idled; null, NaN or absent means a real run.
"""

import math

from results.errors import UsageError

COLUMN = 'injected_slowdown'
# The environment variable that slows a run (read by
# tf_cnn_benchmarks/test_hooks/injected_slowdown.py, which takes the name from
# here: `results` cannot import the harness, the harness may import `results`).
ENV_VAR = 'TF_CNN_BENCHMARKS_TEST_SLOWDOWN'


def fraction(run):
  """The run's injected slowdown (a fraction > 0), or None if real."""
  value = run.get(COLUMN)
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return None
  return float(value) or None


def note(side, runs):
  """'candidate: 5 of 5 runs slowed on purpose by 5% (test-only)', or ''."""
  fractions = sorted({fraction(r) for r in runs} - {None})
  if not fractions:
    return ''
  return '%s: %d of %d runs slowed on purpose by %s (test-only)' % (
      side, sum(1 for r in runs if fraction(r)), len(runs),
      '/'.join('%.3g%%' % (100 * f) for f in fractions))


def refuse(runs, group_by, baseline, candidate):
  """UsageError when any of runs was slowed on purpose."""
  slowed = [r for r in runs if fraction(r)]
  if not slowed:
    return
  raise UsageError(
      '%d of the %d runs of %s %r and %r were slowed on purpose by the '
      'test-only injected slowdown (their records say `injected_slowdown`; '
      'see tf_cnn_benchmarks/test_hooks/injected_slowdown.py): they are not '
      'real measurements. Compare folders of real runs, or pass '
      '--allow_injected_slowdown if measuring the test itself is what you '
      'want (studies/detection_power.py does).'
      % (len(slowed), len(runs), group_by, baseline, candidate))
