"""Dashboard charts as PNG bytes (matplotlib's Figure API, Agg, no pyplot).

Every function takes plain run dicts (comparison.usable_runs) and returns PNG
bytes, or None when the data has nothing to show for that chart.
"""

import io

import matplotlib
matplotlib.use('Agg')   # headless: never look for a display
from matplotlib.figure import Figure  # noqa: E402
import numpy as np  # noqa: E402

from results import comparison as comparison_lib  # noqa: E402

IPS = 'summary.images_per_sec'
TF_VERSION = 'environment.tf_version'


def tf_versions(runs):
  return sorted({str(r.get(TF_VERSION)) for r in runs},
                key=comparison_lib.version_sort_key)


def _png(figure):
  buffer = io.BytesIO()
  figure.savefig(buffer, format='png', dpi=100, bbox_inches='tight')
  return buffer.getvalue()


# Public for the other chart modules (results/history/chart.py).
figure_png = _png


def _median_and_iqr(values):
  low, median, high = np.percentile(values, [25, 50, 75])
  return median, median - low, high - median


def config_labels(runs, leave_out=()):
  """config key -> short label naming only the fields that vary."""
  keys = sorted({comparison_lib.config_key(r) for r in runs},
                key=comparison_lib.sortable_key)
  fields = [f for f in comparison_lib.varying_fields(keys) if f not in leave_out]
  return {key: comparison_lib.describe_config(key, fields) for key in keys}


def throughput_by_version(runs):
  """Grouped bars: median images/sec per configuration, one bar per TF version,
  error bars spanning the interquartile range of the runs."""
  if not runs:
    return None
  labels = config_labels(runs)
  versions = tf_versions(runs)
  keys = list(labels)
  figure = Figure(figsize=(max(6.0, 1.2 * len(keys) * max(1, len(versions)) / 2
                               + 2), 4.5))
  axes = figure.add_subplot()
  width = 0.8 / len(versions)
  positions = np.arange(len(keys))
  for index, version in enumerate(versions):
    medians, below, above = [], [], []
    for key in keys:
      values = [r[IPS] for r in runs if comparison_lib.config_key(r) == key
                and str(r.get(TF_VERSION)) == version]
      median, low, high = _median_and_iqr(values) if values else (np.nan, 0, 0)
      medians.append(median)
      below.append(low)
      above.append(high)
    axes.bar(positions + (index - (len(versions) - 1) / 2) * width, medians,
             width, yerr=[below, above], capsize=3, label='TF %s' % version)
  axes.set_xticks(positions, [labels[k] for k in keys], rotation=20,
                  ha='right', fontsize=8)
  axes.set_ylabel('images/sec (median, bars: IQR of runs)')
  axes.set_title('Throughput per configuration and TensorFlow version')
  axes.legend(fontsize=8)
  axes.grid(axis='y', alpha=0.3)
  return _png(figure)


def _scaling_series(runs, field):
  """(label, xs, medians) per line along which `field` takes 2+ values.

  A line is one configuration (with `field` blanked out) on one TF version.
  """
  field_index = comparison_lib.CONFIG_KEY_FIELDS.index(field)
  all_keys = {comparison_lib.config_key(r) for r in runs}
  label_fields = [f for f in comparison_lib.varying_fields(all_keys)
                  if f != field]
  lines = {}
  for run in runs:
    key = list(comparison_lib.config_key(run))
    x = key[field_index]
    key[field_index] = None
    line = (tuple(key), str(run.get(TF_VERSION)))
    lines.setdefault(line, {}).setdefault(x, []).append(run[IPS])
  series = []
  for (key, version), points in sorted(
      lines.items(),
      key=lambda kv: comparison_lib.config_and_version_key(kv[0])):
    xs = sorted(x for x in points if x is not None)
    if len(xs) < 2:
      continue
    label = '%s, TF %s' % (comparison_lib.describe_config(key, label_fields),
                           version)
    series.append((label, xs, [float(np.median(points[x])) for x in xs]))
  return series


def scaling(runs):
  """images/sec against towers (num_devices) and workers (num_workers)."""
  panels = [('num_devices', 'towers per worker'), ('num_workers', 'workers')]
  panels = [(field, title, _scaling_series(runs, field))
            for field, title in panels]
  panels = [panel for panel in panels if panel[2]]
  if not panels:
    return None
  figure = Figure(figsize=(6 * len(panels), 4.5))
  for index, (field, title, series) in enumerate(panels, 1):
    axes = figure.add_subplot(1, len(panels), index)
    for label, xs, medians in series:
      axes.plot(xs, medians, marker='o', label=label)
    axes.set_xlabel(title)
    axes.set_ylabel('images/sec (median of runs)')
    axes.set_title('Scaling with %s' % title)
    axes.set_xticks(sorted({x for _, xs, _ in series for x in xs}))
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
  return _png(figure)


def step_times(run, title):
  """One run's step times in order, warm-up steps first and greyed."""
  warmup = [t * 1000 for t in run.get('timing.warmup_step_times_sec') or []]
  timed = [t * 1000 for t in run.get('timing.step_times_sec') or []]
  if not timed:
    return None
  figure = Figure(figsize=(7, 3.2))
  axes = figure.add_subplot()
  if warmup:
    axes.plot(range(-len(warmup), 0), warmup, color='0.6', marker='.',
              linestyle='-', label='warm-up')
  axes.plot(range(len(timed)), timed, marker='.', label='timed steps')
  axes.axhline(float(np.median(timed)), color='C3', linewidth=1,
               linestyle='--', label='median %.1f ms' % np.median(timed))
  # The first warm-up steps (graph building) can be 100x slower; scale to
  # the timed steps so their jitter stays visible, and say what was cut.
  top = max(timed) * 1.3
  axes.set_ylim(0, top)
  if warmup and max(warmup) > top:
    axes.text(-len(warmup), top * 0.97, 'warm-up up to %.0f ms (clipped)'
              % max(warmup), fontsize=7, va='top', color='0.4')
  axes.set_xlabel('step')
  axes.set_ylabel('step time (ms)')
  axes.set_title(title, fontsize=9)
  axes.grid(alpha=0.3)
  axes.legend(fontsize=7)
  return _png(figure)
