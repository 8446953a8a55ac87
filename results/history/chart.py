"""One configuration's history as a PNG: every run a point in order, the
median of each segment between steps as a line, each step a vertical line
labelled with its size and interval; ticks name the TF version and commit."""

from matplotlib.figure import Figure
import numpy as np

from results import plots  # first: it selects the headless Agg backend
from results.history import change_points
from results.history import ordering

MAX_TICKS = 12
STEP_COLOURS = {change_points.STEP_DOWN: 'C3', change_points.STEP_UP: 'C2',
                change_points.UNCONFIRMED: '0.5'}


def _tick_label(run, order):
  """Both the version and the commit, the ordering's own first."""
  if order == 'commit':
    return '%s\nTF %s' % (ordering.short_commit(run), ordering.version_of(run))
  if order == 'tf_version':
    return '%s\n%s' % (ordering.version_of(run), ordering.short_commit(run))
  return '%s\nTF %s %s' % (ordering.started_text(run),
                           ordering.version_of(run), ordering.short_commit(run))


def _tick_positions(series, steps):
  """The first run of each block, thinned to MAX_TICKS, and the first run
  after every step; ticks crowding a step's are left out."""
  starts = [i for i in range(len(series.runs))
            if i == 0 or series.blocks[i] != series.blocks[i - 1]]
  if len(starts) > MAX_TICKS:
    keep = np.linspace(0, len(starts) - 1, MAX_TICKS).round().astype(int)
    starts = [starts[i] for i in sorted(set(keep))]
  after_steps = [step.index for step in steps]
  room = max(1.5, len(series.runs) / (2.0 * MAX_TICKS))
  starts = [i for i in starts
            if all(abs(i - j) >= room for j in after_steps)]
  return sorted(set(starts + after_steps))


def history_chart(one, order, title):
  """PNG bytes of one analysis.SeriesHistory."""
  figure = Figure(figsize=(max(7.0, min(14.0, 0.12 * len(one.series.runs)
                                              + 5)), 4.2))
  axes = figure.add_subplot()
  values = np.asarray(one.throughputs)
  positions = np.arange(len(values))
  axes.plot(positions, values, linestyle='none', marker='o', markersize=4,
            color='C0', label='runs (images/sec)')
  edges = [0] + [step.index for step in one.steps] + [len(values)]
  for start, end in zip(edges[:-1], edges[1:]):
    axes.hlines(float(np.median(values[start:end])), start - 0.4, end - 0.6,
                color='C1', linewidth=2,
                label='segment median' if start == 0 else None)
  # Not from zero: a 2% step must be visible.
  bottom, top = float(values.min()) * 0.85, float(values.max()) * 1.12
  for step in one.steps:
    result = step.result
    axes.axvline(step.index - 0.5, color=STEP_COLOURS[step.kind],
                 linestyle='--', linewidth=1.2)
    interval = ('' if np.isnan(result.change_pct_low) else
                '\n[%+.1f%%, %+.1f%%]' % (result.change_pct_low,
                                          result.change_pct_high))
    place = ordering.step_place(one.series.runs[step.index - 1],
                                one.series.runs[step.index], order)
    axes.annotate('%s %+.1f%%%s\n%s' % (step.kind, result.change_pct, interval,
                                        place.replace(', ', '\n')),
                  (step.index - 0.5, top), xytext=(4, 0),
                  textcoords='offset points', fontsize=8, va='top',
                  color=STEP_COLOURS[step.kind])
  ticks = _tick_positions(one.series, one.steps)
  axes.set_xticks(ticks, [_tick_label(one.series.runs[i], order)
                          for i in ticks], rotation=30, ha='right', fontsize=7)
  axes.set_xlim(-0.8, len(values) - 0.2)
  axes.set_ylim(bottom, top)
  axes.set_xlabel('runs in %s order' % order.replace('_', ' '))
  axes.set_ylabel('images/sec')
  axes.set_title(title, fontsize=9)
  axes.grid(axis='y', alpha=0.3)
  axes.legend(fontsize=7, loc='lower left')
  return plots.figure_png(figure)
