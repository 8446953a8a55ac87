"""Dashboard charts as matplotlib Figures (the Figure API, Agg, no pyplot).

Every chart function takes plain run dicts (comparison.usable_runs) and
returns a Figure, or None when the data has nothing to show for that chart;
figure_png and figure_svg turn one into the bytes of a file.
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


def _file_bytes(figure, file_format, **options):
  buffer = io.BytesIO()
  figure.savefig(buffer, format=file_format, bbox_inches='tight', **options)
  return buffer.getvalue()


def _png(figure):
  return _file_bytes(figure, 'png', dpi=100)


# Public for the other chart modules (results/history/chart.py).
figure_png = _png


def figure_svg(figure):
  """The figure as SVG text bytes, for a report that scales it."""
  return _file_bytes(figure, 'svg')


def key_labels(keys):
  """config key -> short label naming the fields that vary among ``keys``
  (the model when none does): the answering charts' row labels."""
  fields = comparison_lib.varying_fields(keys) or ['model']
  return {key: comparison_lib.describe_config(key, fields) for key in keys}


def _median_and_iqr(values):
  low, median, high = np.percentile(values, [25, 50, 75])
  return median, median - low, high - median


def config_labels(runs, leave_out=()):
  """config key -> short label naming only the fields that vary."""
  keys = sorted({comparison_lib.config_key(r) for r in runs},
                key=comparison_lib.sortable_key)
  fields = [f for f in comparison_lib.varying_fields(keys) if f not in leave_out]
  return {key: comparison_lib.describe_config(key, fields) for key in keys}


def _groups(runs, group_by):
  return comparison_lib.available_values(runs, group_by)


def throughput_by_group(runs, group_by):
  """Per configuration, one bar per group (TF version, label, ...): the
  median images/sec with the interquartile range, and every run as a dot
  on its bar, so a lone outlier or two clusters of runs show at a glance."""
  if not runs:
    return None
  labels = config_labels(runs)
  groups = _groups(runs, group_by)
  keys = list(labels)
  figure = Figure(figsize=(max(6.0, 1.2 * len(keys) * max(1, len(groups)) / 2
                               + 2), 4.5))
  axes = figure.add_subplot()
  width = 0.8 / len(groups)
  positions = np.arange(len(keys))
  # Dots spread across the bar's width in a fixed pattern: the same page
  # for the same runs.
  rng = np.random.default_rng(0)
  for index, group in enumerate(groups):
    medians, below, above = [], [], []
    centres = positions + (index - (len(groups) - 1) / 2) * width
    for centre, key in zip(centres, keys):
      values = [r[IPS] for r in runs if comparison_lib.config_key(r) == key
                and comparison_lib.group_value(r, group_by) == group]
      median, low, high = _median_and_iqr(values) if values else (np.nan, 0, 0)
      medians.append(median)
      below.append(low)
      above.append(high)
      if values:
        axes.scatter(centre + rng.uniform(-0.3, 0.3, len(values)) * width,
                     values, s=12, color='black', alpha=0.7, zorder=3,
                     linewidths=0)
    axes.bar(centres, medians, width, yerr=[below, above], capsize=3,
             alpha=0.75, label=comparison_lib.group_title(group_by, group))
  axes.set_xticks(positions, [labels[k] for k in keys], rotation=20,
                  ha='right', fontsize=8)
  axes.set_ylabel('images/sec (bar: median, whiskers: IQR, dots: runs)')
  axes.set_title('Throughput per configuration and %s'
                 % comparison_lib.GROUP_TITLES[group_by])
  axes.legend(fontsize=8)
  axes.grid(axis='y', alpha=0.3)
  return figure


def _scaling_series(runs, field, group_by):
  """(label, xs, medians) per line along which `field` takes 2+ values.

  A line is one configuration (with `field` blanked out) in one group.
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
    line = (tuple(key), comparison_lib.group_value(run, group_by))
    lines.setdefault(line, {}).setdefault(x, []).append(run[IPS])
  series = []
  for (key, version), points in sorted(
      lines.items(),
      key=lambda kv: comparison_lib.config_and_version_key(kv[0])):
    xs = sorted(x for x in points if x is not None)
    if len(xs) < 2:
      continue
    label = '%s, %s' % (comparison_lib.describe_config(key, label_fields),
                        comparison_lib.group_title(group_by, version))
    series.append((label, xs, [float(np.median(points[x])) for x in xs]))
  return series


def scaling(runs, group_by):
  """images/sec against towers (num_devices) and workers (num_workers)."""
  panels = [('num_devices', 'towers per worker'), ('num_workers', 'workers')]
  panels = [(field, title, _scaling_series(runs, field, group_by))
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
  return figure


def step_times(runs, group_by, title):
  """The step times of every run of one configuration, in order: one thin
  line per run, coloured by its group, and each group's median step time
  dashed. Warm-up steps are left out (the first ones build the graph and
  would squash the scale)."""
  runs = [run for run in runs if run.get('timing.step_times_sec')]
  if not runs:
    return None
  figure = Figure(figsize=(7, 3.4))
  axes = figure.add_subplot()
  top = 0.0
  for index, group in enumerate(_groups(runs, group_by)):
    colour = 'C%d' % (index % 10)
    members = [run for run in runs
               if comparison_lib.group_value(run, group_by) == group]
    pooled = []
    for run in members:
      timed = [t * 1000 for t in run['timing.step_times_sec']]
      pooled += timed
      axes.plot(range(len(timed)), timed, color=colour, linewidth=0.8,
                alpha=0.6)
    median = float(np.median(pooled))
    top = max(top, float(np.percentile(pooled, 99)))
    axes.axhline(median, color=colour, linewidth=1.5, linestyle='--',
                 label='%s: %d run(s), median %.1f ms' % (
                     comparison_lib.group_title(group_by, group),
                     len(members), median))
  # A rare slow step (a page fault, another process) would flatten the
  # rest; clip at the 99th percentile and say so in the axis label.
  axes.set_ylim(0, top * 1.3)
  axes.set_xlabel('timed step')
  axes.set_ylabel('step time (ms, clipped at 1.3 x p99)')
  axes.set_title(title, fontsize=9)
  axes.grid(alpha=0.3)
  axes.legend(fontsize=7)
  return figure
