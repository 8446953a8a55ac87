"""How does each TensorFlow version compare with a reference? The version
matrix of a `matrix` or `bisect` folder, drawn.

Left, a heatmap: configurations x TensorFlow versions, each cell the change
of a version's runs against the reference version's (the Hodges-Lehmann
estimate, as `compare`), coloured by that change, with the number and the
verdict written in the cell. Every cell of the matrix is one family: the
verdicts are Holm-adjusted over all of them together, as bisect judges its
family. Right, every run as a point: its images/sec against its
configuration's reference median, per version.
"""

import math

from matplotlib.figure import Figure
import numpy as np

from results import comparison as comparison_lib
from results import plots
from results import stats

MIN_VERSIONS = 3
CAPTION = ('How does each TensorFlow version compare with %s? Each cell is a '
           'configuration\'s change against it (Holm-adjusted verdicts over '
           'the whole matrix); right, every run against its configuration\'s '
           'reference median.')


class VersionMatrix:
  """The cells of the matrix: versions (reference first), configuration
  keys and labels, and {(key, version): ConfigComparison}."""

  def __init__(self, frame, reference, alpha, min_effect_pct):
    runs = comparison_lib.usable_runs(frame)
    self.versions = comparison_lib.available_values(runs, 'tf_version')
    self.reference = comparison_lib.normalise_group_value(
        'tf_version', reference or self.versions[0])
    others = [v for v in self.versions if v != self.reference]
    self.versions = [self.reference] + others
    self.cells = {}
    family = []
    for version in others:
      result = comparison_lib.compare_groups(
          frame, 'tf_version', self.reference, version, alpha=alpha,
          min_effect_pct=min_effect_pct, allow_injected=True, judged=False)
      for row in result.rows:
        self.cells[(row.key, version)] = row
        family.append(row)
    comparison_lib.judge_family(family, alpha, min_effect_pct)
    self.keys = sorted({key for key, _ in self.cells},
                       key=comparison_lib.sortable_key)
    self.labels = plots.key_labels(self.keys)
    self.runs = runs

  def steps(self):
    """[[versions of a plan], ...] in the order the plans began: a `bisect`
    folder's steps (each step is one plan of the runner); [] for a single
    plan (a `matrix`) or runs without one."""
    began = {}
    for run in self.runs:
      plan = run.get('sequence.plan')
      if not isinstance(plan, str):
        continue
      version = comparison_lib.group_value(run, 'tf_version')
      first, versions = began.get(plan, (str(run.get('started_at')), set()))
      versions.add(version)
      began[plan] = (min(first, str(run.get('started_at'))), versions)
    if len(began) < 2:
      return []
    return [sorted(versions, key=comparison_lib.version_sort_key)
            for _, versions in sorted(began.values(), key=lambda b: b[0])]

  def first_slower(self):
    """The oldest version called a regression against the reference in
    some configuration, every version before it in none; None if none."""
    for version in self.versions[1:]:
      if any(self.cells.get((key, version)) is not None and
             self.cells[(key, version)].verdict == stats.REGRESSION
             for key in self.keys):
        return version
    return None

  def change(self, key, version):
    row = self.cells.get((key, version))
    if row is None or row.result is None:
      return math.nan
    return row.result.change_pct

  def cell_text(self, key, version):
    if version == self.reference:
      return 'reference'
    row = self.cells.get((key, version))
    if row is None or row.result is None:
      return 'n/a'
    return '%+.1f%%\n%s' % (row.result.change_pct, row.verdict)


def _relative_runs(matrix):
  """{key: {version: [run / reference median - 1, in %]}}."""
  out = {}
  for key in matrix.keys:
    by_version = {}
    for run in matrix.runs:
      if comparison_lib.config_key(run, 'tf_version') != key:
        continue
      version = comparison_lib.group_value(run, 'tf_version')
      by_version.setdefault(version, []).append(run[plots.IPS])
    base = by_version.get(matrix.reference)
    if not base:
      continue
    median = float(np.median(base))
    out[key] = {v: [100.0 * (x / median - 1.0) for x in values]
                for v, values in by_version.items()}
  return out


def heatmap(matrix):
  """A Figure of the matrix, or None below MIN_VERSIONS versions. The
  heatmap's cell texts are axes[0].texts, row by row: the tests read them."""
  if len(matrix.versions) < MIN_VERSIONS or not matrix.keys:
    return None
  changes = np.array([[0.0 if v == matrix.reference else
                       matrix.change(key, v) for v in matrix.versions]
                      for key in matrix.keys])
  finite = np.abs(changes[np.isfinite(changes)])
  scale = max(5.0, float(finite.max()) if finite.size else 5.0)
  figure = Figure(figsize=(6 + 1.1 * len(matrix.versions),
                           1.8 + 0.55 * len(matrix.keys)))
  grid = figure.add_gridspec(1, 2, width_ratios=(3, 2))
  axes = figure.add_subplot(grid[0])
  image = axes.imshow(np.ma.masked_invalid(changes), cmap='RdBu',
                      vmin=-scale, vmax=scale, aspect='auto')
  for i, key in enumerate(matrix.keys):
    for j, version in enumerate(matrix.versions):
      row = matrix.cells.get((key, version))
      bold = row is not None and row.verdict in (stats.REGRESSION,
                                                 stats.IMPROVEMENT)
      axes.text(j, i, matrix.cell_text(key, version), ha='center',
                va='center', fontsize=7,
                fontweight='bold' if bold else 'normal')
  axes.set_xticks(range(len(matrix.versions)),
                  ['TF %s' % v for v in matrix.versions], rotation=20,
                  ha='right', fontsize=8)
  axes.set_yticks(range(len(matrix.keys)),
                  [matrix.labels[k] for k in matrix.keys], fontsize=8)
  axes.set_title('Change against TF %s (%%)' % matrix.reference, fontsize=10)
  figure.colorbar(image, ax=axes, shrink=0.8)  # the title names the unit
  runs_axes = figure.add_subplot(grid[1])
  relative = _relative_runs(matrix)
  rng = np.random.default_rng(0)
  for index, key in enumerate(matrix.keys):
    for j, version in enumerate(matrix.versions):
      values = relative.get(key, {}).get(version, [])
      runs_axes.scatter(j + rng.uniform(-0.15, 0.15, len(values)), values,
                        s=10, color='C%d' % (index % 10), alpha=0.7,
                        label=matrix.labels[key] if j == 0 else None,
                        linewidths=0)
  runs_axes.axhline(0, color='0.5', linewidth=0.8)
  runs_axes.set_xticks(range(len(matrix.versions)),
                       ['TF %s' % v for v in matrix.versions], rotation=20,
                       ha='right', fontsize=8)
  runs_axes.set_ylabel('run against the reference median (%)')
  runs_axes.set_title('Every run', fontsize=10)
  runs_axes.grid(alpha=0.3)
  runs_axes.legend(fontsize=7)
  return figure
