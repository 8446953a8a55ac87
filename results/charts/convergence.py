"""Which reaches its accuracy first, and at what memory? Convergence runs
(issue #30's time to accuracy) and peak memory, drawn.

accuracy(): every run's evaluations during training, top-1 accuracy against
wall seconds from the run's start, coloured by group, the target
(--stop_at_top_1_accuracy) as a dashed line; beside it each group's time to
target, a run a point and the median a bar (runs that never reached it are
counted in the title, not drawn as 0). memory(): each configuration's peak
resident memory per group, a run a point.
"""

import math

from matplotlib.figure import Figure
import numpy as np

from results import comparison as comparison_lib
from results import plots

EVALUATIONS = 'summary.evaluations'
TARGET = 'summary.target_top_1_accuracy'
TIME_TO_TARGET = 'summary.time_to_target_sec'
PEAK_RSS = 'summary.peak_rss_mb'
ACCURACY_CAPTION = ('Which reaches its accuracy first? Top-1 accuracy of '
                    'every run against wall time, the target dashed; right, '
                    'each group\'s time to the target.')
MEMORY_CAPTION = ('How much memory does each configuration take? Peak '
                  'resident memory of every run (a task of a cluster counts '
                  'its own), per group.')


def _number(value):
  try:
    value = float(value)
  except (TypeError, ValueError):
    return math.nan
  return value


def curve(run):
  """[(elapsed seconds, top-1 accuracy)] of a run's training evaluations."""
  points = []
  for evaluation in run.get(EVALUATIONS) or []:
    elapsed = _number((evaluation or {}).get('elapsed_sec'))
    accuracy = _number((evaluation or {}).get('top_1_accuracy'))
    if math.isfinite(elapsed) and math.isfinite(accuracy):
      points.append((elapsed, accuracy))
  return points


def _convergence_runs(frame):
  """Runs with an accuracy curve (status ok or target_not_reached)."""
  return [run for run in comparison_lib.usable_runs(frame) if curve(run)]


def accuracy(frame, group_by):
  """A Figure of the curves and the times to target, or None when no run
  evaluated during training."""
  runs = _convergence_runs(frame)
  if not runs:
    return None
  groups = comparison_lib.available_values(runs, group_by)
  figure = Figure(figsize=(11, 4.2))
  grid = figure.add_gridspec(1, 2, width_ratios=(3, 2))
  axes = figure.add_subplot(grid[0])
  targets = sorted({t for t in (_number(run.get(TARGET)) for run in runs)
                    if math.isfinite(t)})
  for index, group in enumerate(groups):
    colour = 'C%d' % (index % 10)
    members = [r for r in runs
               if comparison_lib.group_value(r, group_by) == group]
    for number, run in enumerate(members):
      xs, ys = zip(*curve(run))
      axes.plot(xs, ys, color=colour, marker='.', linewidth=1, alpha=0.8,
                label='%s (%d run(s))' % (
                    comparison_lib.group_title(group_by, group), len(members))
                if number == 0 else None)
  for target in targets:
    axes.axhline(target, color='0.3', linestyle='--', linewidth=1,
                 label='target %.3g' % target)
  axes.set_xlabel('seconds from the run\'s start')
  axes.set_ylabel('top-1 accuracy')
  axes.set_title('Accuracy against time, every run', fontsize=10)
  axes.grid(alpha=0.3)
  axes.legend(fontsize=7)
  times_axes = figure.add_subplot(grid[1])
  short = 0
  for index, group in enumerate(groups):
    times = [_number(r.get(TIME_TO_TARGET)) for r in runs
             if comparison_lib.group_value(r, group_by) == group]
    reached = [t for t in times if math.isfinite(t)]
    short += len(times) - len(reached)
    if reached:
      times_axes.bar(index, float(np.median(reached)), 0.6, alpha=0.5,
                     color='C%d' % (index % 10))
      times_axes.scatter([index] * len(reached), reached, s=14,
                         color='black', zorder=3, linewidths=0)
  times_axes.set_xticks(range(len(groups)),
                        [comparison_lib.group_title(group_by, g)
                         for g in groups], rotation=20, ha='right',
                        fontsize=8)
  times_axes.set_ylabel('seconds to target (bar: median, dots: runs)')
  times_axes.set_title('Time to target%s' % (
      '; %d run(s) never reached it' % short if short else ''), fontsize=10)
  times_axes.grid(axis='y', alpha=0.3)
  return figure


def memory(frame, group_by):
  """A Figure of each configuration's peak RSS per group, or None when no
  run recorded one."""
  runs = [r for r in comparison_lib.usable_runs(frame)
          if math.isfinite(_number(r.get(PEAK_RSS)))]
  if not runs:
    return None
  labels = plots.config_labels(runs)
  keys = list(labels)
  groups = comparison_lib.available_values(runs, group_by)
  figure = Figure(figsize=(max(6.0, 1.0 * len(keys) * len(groups) + 2), 4))
  axes = figure.add_subplot()
  width = 0.8 / len(groups)
  for index, group in enumerate(groups):
    centres = np.arange(len(keys)) + (index - (len(groups) - 1) / 2) * width
    medians = []
    for centre, key in zip(centres, keys):
      values = [_number(r.get(PEAK_RSS)) for r in runs
                if comparison_lib.config_key(r) == key
                and comparison_lib.group_value(r, group_by) == group]
      medians.append(float(np.median(values)) if values else math.nan)
      axes.scatter([centre] * len(values), values, s=12, color='black',
                   zorder=3, linewidths=0)
    axes.bar(centres, medians, width, alpha=0.7,
             label=comparison_lib.group_title(group_by, group))
  axes.set_xticks(range(len(keys)), [labels[k] for k in keys], rotation=20,
                  ha='right', fontsize=8)
  axes.set_ylabel('peak RSS (MiB; bar: median, dots: runs)')
  axes.set_title('Peak memory per configuration', fontsize=10)
  axes.grid(axis='y', alpha=0.3)
  axes.legend(fontsize=8)
  return figure
