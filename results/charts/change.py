"""Is the candidate slower? `compare`'s table drawn as a forest plot.

Per configuration, the Hodges-Lehmann change (candidate against baseline)
as a point with its 95% interval, on one shared axis in %, the --min_effect
band shaded (a change inside it is never a verdict), the verdict as colour,
configurations sorted by change: the slowest at the top. The verdict drawn
is the family's (Holm-adjusted), the one `compare` prints and exits on.
"""

import math

from matplotlib.figure import Figure

from results import comparison as comparison_lib
from results import plots
from results import stats

VERDICT_COLOURS = {stats.REGRESSION: '#c62828', stats.IMPROVEMENT: '#2e7d32',
                   stats.NO_CHANGE: '#455a64', stats.INCONCLUSIVE: '#9e9e9e'}
CAPTION = ('Is the candidate slower? Each configuration\'s change, candidate '
           'against baseline, with its 95% interval; the grey band is the '
           'smallest change that counts (--min_effect); colour is the '
           'verdict after Holm\'s adjustment over all the configurations.')


def drawn_rows(comparison, labels):
  """(label, change %, low %, high %, verdict) of every row with an
  estimate, slowest first (lower-is-better metrics: largest rise first)."""
  rows = []
  for row in comparison.rows:
    result = row.result
    if result is None or math.isnan(result.change_pct):
      continue
    rows.append((labels[row.key], result.change_pct, result.change_pct_low,
                 result.change_pct_high, row.verdict))
  higher_is_better = comparison_lib.METRICS[comparison.metric][1]
  worst_first = 1 if higher_is_better else -1
  return sorted(rows, key=lambda r: worst_first * r[1])


def forest(comparison):
  """A Figure of the change per configuration, or None if no row has one.

  Each row is one errorbar container (axes.containers, top row first), its
  label the configuration's: the tests read the points back from it.
  """
  rows = drawn_rows(comparison, plots.key_labels(
      [row.key for row in comparison.rows]))
  if not rows:
    return None
  figure = Figure(figsize=(7.5, 1.2 + 0.42 * len(rows)))
  axes = figure.add_subplot()
  band = comparison.min_effect_pct
  axes.axvspan(-band, band, color='0.92', zorder=0)
  axes.axvline(0, color='0.5', linewidth=0.8, zorder=1)
  # An unbounded interval (too few runs) is drawn to the axis edge.
  finite = [v for r in rows for v in r[1:4] if math.isfinite(v)]
  reach = max([abs(v) for v in finite] + [band]) * 1.15
  for position, (label, change, low, high, verdict) in enumerate(rows):
    y = len(rows) - 1 - position
    low = low if math.isfinite(low) else -reach
    high = high if math.isfinite(high) else reach
    container = axes.errorbar(
        [change], [y], xerr=[[change - low], [high - change]], fmt='o',
        color=VERDICT_COLOURS.get(verdict, 'black'), capsize=3,
        markersize=6, zorder=3)
    container.set_label(label)
    axes.annotate('%+.1f%%  %s' % (change, verdict), (high, y),
                  xytext=(6, 0), textcoords='offset points', va='center',
                  fontsize=8, color=VERDICT_COLOURS.get(verdict, 'black'))
  axes.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)],
                  fontsize=8)
  axes.set_xlim(-reach * 1.1, reach * 1.45)
  axes.set_xlabel('change in %s, candidate %s against baseline %s (%%)' % (
      comparison.metric.replace('_', ' '), comparison.candidate,
      comparison.baseline))
  axes.set_title('Change per configuration, 95% interval, verdict by colour',
                 fontsize=10)
  axes.grid(axis='x', alpha=0.3)
  return figure
