"""Compare two groups of runs, configuration by configuration.

A group is every usable run whose grouping column equals a value: two TF
versions (`environment.tf_version`), two labels (`label`), two harness
commits (`environment.harness_version`), two engines (`config.engine`;
records without it are graph runs) or two result folders (`source_dir`).
Runs are matched on CONFIG_KEY_FIELDS (what was measured), never on how long
or where it ran.

The unit of observation is a run: its `summary.images_per_sec`. A cluster
run (several records sharing `cluster_run_id`) counts once, with the median of
its workers' cluster-total estimates; parameter-server records carry no
throughput and are left out.

Runs taken in interleaved pairs (the runner's `sequence`: the same plan,
configuration and round on both sides, every run with its partner) are
judged by the paired test, other groups by Mann-Whitney (results/stats.py);
each row names its test. A side with a single run gets no verdict: the steps
of one process are not independent samples, so the row is `inconclusive`
and says how many runs would do (its per-step figures are shown as a
description only). The configurations judged together are one family for
the verdicts (Holm, stats.judge_family). Each row says the smallest slowdown
it could have caught (80% power, from the spread it observed) and the runs a
side that catch a 5% one, at the level a lone change must reach in the
family (alpha / k, k the configurations measured on both sides).
"""

import dataclasses
import math
import os

import numpy as np
from packaging.version import InvalidVersion, Version

from results import detection_power
from results import injected_runs
from results import quiet_runs
from results import stats
from results.errors import UsageError

CONFIG_KEY_FIELDS = (
    'model', 'batch_size_per_device', 'mode', 'num_devices', 'num_workers',
    'num_ps', 'data_name', 'synthetic', 'variable_update', 'device',
    'data_format', 'optimizer', 'use_fp16', 'compute_dtype', 'xla_compile',
    'cross_replica_sync', 'sync_updates', 'engine')
# A key field's value that records from before the field existed meant: it
# keys as absent, so an old record still matches a new one that states it.
# (Every run before --engine existed was a graph-engine run.)
KEY_FIELD_DEFAULTS = {'sync_updates': 'mean', 'engine': 'graph'}
# Short column titles for tables and chart labels.
SHORT_NAMES = {
    'batch_size_per_device': 'batch', 'num_devices': 'towers',
    'num_workers': 'workers', 'num_ps': 'ps', 'data_name': 'data',
    'variable_update': 'variable_update', 'cross_replica_sync': 'sync',
    'data_format': 'format', 'compute_dtype': 'dtype', 'xla_compile': 'xla',
    'use_fp16': 'fp16', 'sync_updates': 'sync_updates', 'engine': 'engine'}
# --by name -> DataFrame column.
GROUP_COLUMNS = {
    'tf_version': 'environment.tf_version',
    'label': 'label',
    'commit': 'environment.harness_version',
    # --by engine --baseline graph --candidate tf2: the same configurations
    # on both engines (the engine is then no part of the key).
    'engine': 'config.engine',
    'dir': 'source_dir',
}
# The order in which a chart picks what to group by when the user did not
# say: the first of these that takes two or more values among the runs.
GROUP_PREFERENCE = ('tf_version', 'label', 'engine', 'commit', 'dir')
# How a group is named in legends and table headers.
GROUP_TITLES = {'tf_version': 'TF version', 'label': 'label',
                'commit': 'commit', 'engine': 'engine', 'dir': 'folder'}
MISSING = 'missing'
# Percentage points between the medians' change and the Hodges-Lehmann
# change beyond which the table explains why they differ.
DISAGREEMENT_PCT = 1.0
# --metric: what a run's number is. name -> (unit for tables, higher is
# better). Throughput is the default; for a lower-is-better metric (memory)
# an increase is the regression.
THROUGHPUT = 'images_per_sec'
METRICS = {THROUGHPUT: ('img/s', True),
           'peak_rss_mb': ('peak RSS MiB', False),
           # The process's own CPU time per image: blind to what other
           # processes took (a busy machine lowers images/sec, not this),
           # a second view of the same change.
           'cpu_seconds_per_image': ('CPU s/image', False),
           # Convergence (--stop_at_top_1_accuracy runs): fewer is better; a
           # run that never reached its target has none and is left out.
           'epochs_to_target': ('epochs to target', False),
           'time_to_target_sec': ('s to target', False)}
# The test of a row with one run on a side: none.
NO_TEST = 'none'
# What pairs two sides' runs (SCHEMA.md `sequence`).
PAIR_COLUMNS = ('sequence.plan', 'sequence.config', 'sequence.round')
# Between the parts of a row's note (tables.py cites a shared part once).
NOTE_SEPARATOR = '; '


def _plain(value):
  """Frame cell -> hashable, comparable Python value (NaN -> None)."""
  if value is None:
    return None
  if isinstance(value, float):
    if math.isnan(value):
      return None
    if value.is_integer():
      return int(value)
  if isinstance(value, np.generic):
    return _plain(value.item())
  return value


def _key_value(row, field):
  value = _plain(row.get('config.' + field))
  return None if value == KEY_FIELD_DEFAULTS.get(field) else value


def config_key(row, group_by=None):
  """What was measured; a key field that is the grouping itself (--by
  engine) is left out, so the two groups' runs pair up."""
  grouped = (GROUP_COLUMNS.get(group_by) or '').removeprefix('config.')
  return tuple(None if field == grouped else _key_value(row, field)
               for field in CONFIG_KEY_FIELDS)


def sortable_key(key):
  """Orders keys naturally (batch 32 before 128) even with None inside."""
  return tuple((value is None, isinstance(value, str), value
                if value is not None else 0) for value in key)


def version_sort_key(version):
  """PEP 440 order (2.9.1 < 2.10.0, 2.21.0rc1 < 2.21.0); non-versions last."""
  text = str(version)
  try:
    return (False, Version(text), text)
  except InvalidVersion:
    return (True, None, text)


def config_and_version_key(pair):
  """Sort key of a (config key, TF version) pair."""
  key, version = pair
  return sortable_key(key), version_sort_key(version)


def key_values(key):
  """{field: value} of a key, for display: a field keyed as absent because
  it had its default (KEY_FIELD_DEFAULTS) shows that default."""
  values = dict(zip(CONFIG_KEY_FIELDS, key))
  for field, default in KEY_FIELD_DEFAULTS.items():
    if values[field] is None:
      values[field] = default
  return values


def describe_config(key, fields=CONFIG_KEY_FIELDS):
  """'trivial batch=32 towers=1' from a key, naming only the given fields."""
  values = key_values(key)
  parts = [str(values['model'])] if 'model' in fields else []
  for field in fields:
    if field != 'model':
      parts.append('%s=%s' % (SHORT_NAMES.get(field, field), values[field]))
  return ' '.join(parts)


def varying_fields(keys):
  """Key fields whose value differs between keys; model always included."""
  fields = []
  for index, field in enumerate(CONFIG_KEY_FIELDS):
    if field == 'model' or len({key[index] for key in keys}) > 1:
      fields.append(field)
  return fields


def usable_runs(frame):
  """Successful runs with a throughput, one row per run (clusters merged).

  Returns a list of dicts (row values) to keep the logic free of pandas
  index gymnastics; the frames here are small.
  """
  rows = []
  for row in frame.to_dict('records'):
    ips = _plain(row.get('summary.images_per_sec'))
    # A run short of its --stop_at_top_1_accuracy target trained and
    # measured: its rates stand (its time to target is None).
    if (row.get('status') not in ('ok', 'target_not_reached') or ips is None
        or ips <= 0):
      continue
    if row.get('config.job_name') == 'ps':
      continue
    rows.append(row)
  singles, clusters = [], {}
  for row in rows:
    cluster_id = _plain(row.get('cluster_run_id'))
    if cluster_id:
      clusters.setdefault(cluster_id, []).append(row)
    else:
      singles.append(row)
  for members in clusters.values():
    members.sort(key=lambda r: (_plain(r.get('config.task_index')) or 0))
    merged = dict(members[0])
    merged['summary.images_per_sec'] = float(np.median(
        [r['summary.images_per_sec'] for r in members]))
    singles.append(merged)
  return singles


def step_throughputs(run):
  """Per-step images/sec of one run, scaled so they agree with its summary.

  images per step = images_per_sec * mean step time, whatever the cluster
  layout; each step's rate is that divided by its own wall time.
  """
  times = np.asarray(run.get('timing.step_times_sec') or [], dtype=float)
  times = times[times > 0]
  if len(times) == 0:
    return np.zeros(0)
  images_per_step = run['summary.images_per_sec'] * times.mean()
  return images_per_step / times


@dataclasses.dataclass
class ConfigComparison:
  key: tuple
  baseline_runs: int
  candidate_runs: int
  baseline_median: float     # median images/sec over runs (nan if none)
  candidate_median: float
  test: str                  # stats.PAIRED_TEST, UNPAIRED_TEST, NO_TEST or
                             # MISSING
  result: object             # stats.ShiftComparison or None
  verdict: str
  note: str = ''
  # sd of log throughput (or of the pairs' log ratios) the power figures
  # come from; nan if unknown.
  spread: float = math.nan
  # The smallest slowdown in % this comparison could have caught (80%
  # power; nan: none at this run count, or the spread is unknown) and the
  # runs a side (pairs) that catch a 5% one (stats.detectable_slowdown_pct,
  # stats.runs_for_change).
  detectable_pct: float = math.nan
  runs_needed: int = 0
  # The runs were taken in pairs (pair_runs), whether or not tested.
  paired: bool = False
  # The metric is better lower (memory, epochs to target): a rise is the
  # regression (METRICS).
  lower_is_better: bool = False

  @property
  def median_change_pct(self):
    """Candidate median / baseline median - 1, in % (nan if either is)."""
    if not self.baseline_median or math.isnan(self.baseline_median):
      return math.nan
    return 100.0 * (self.candidate_median / self.baseline_median - 1.0)

  @property
  def estimates_disagree(self):
    """The Hodges-Lehmann change and the medians' change tell a different
    story: opposite signs, or more than DISAGREEMENT_PCT points apart."""
    if self.result is None:
      return False
    medians, estimate = self.median_change_pct, self.result.change_pct
    if math.isnan(medians) or math.isnan(estimate):
      return False
    return (medians * estimate < 0
            or abs(medians - estimate) > DISAGREEMENT_PCT)


@dataclasses.dataclass
class Comparison:
  group_by: str
  baseline: str
  candidate: str
  alpha: float
  min_effect_pct: float
  rows: list
  # The level the power figures are at: alpha / k for k configurations
  # measured on both sides (what a lone change must reach under Holm).
  power_level: float = stats.DEFAULT_ALPHA
  metric: str = THROUGHPUT

  @property
  def unit(self):
    return METRICS[self.metric][0]

  def count(self, verdict):
    return sum(1 for row in self.rows if row.verdict == verdict)

  @property
  def has_regression(self):
    return self.count(stats.REGRESSION) > 0

  def shown_fields(self):
    return varying_fields([row.key for row in self.rows])


def group_value(row, group_by):
  """The run's value of the grouping column, as text ('' if unset)."""
  value = _plain(row.get(GROUP_COLUMNS[group_by]))
  if value is None:
    # A record from before the field existed: its meaning then.
    value = KEY_FIELD_DEFAULTS.get(
        GROUP_COLUMNS[group_by].removeprefix('config.'))
  return '' if value is None else str(value)


def varying_groupings(runs):
  """The --by names whose column takes two or more values among runs, in
  GROUP_PREFERENCE order."""
  return [group_by for group_by in GROUP_PREFERENCE
          if len(available_values(runs, group_by)) >= 2]


def group_display(group_by, value):
  """A group's value for people: a folder's base name, '(none)' if unset."""
  if group_by == 'dir':
    return os.path.basename(value.rstrip(os.sep))
  return value if value != '' else '(none)'


def group_title(group_by, value):
  """'TF 2.21.0', 'label A', 'folder runs-b': a group's name for people."""
  prefix = {'tf_version': 'TF', 'dir': 'folder'}.get(group_by, group_by)
  return '%s %s' % (prefix, group_display(group_by, value))


def normalise_group_value(group_by, value):
  return os.path.abspath(value) if group_by == 'dir' else str(value)


def available_values(runs, group_by):
  return sorted({group_value(row, group_by) for row in runs},
                key=version_sort_key if group_by == 'tf_version' else None)


def _pair_key(run):
  key = tuple(_plain(run.get(column)) for column in PAIR_COLUMNS)
  return None if None in key else key


def pair_runs(baseline_runs, candidate_runs):
  """([(baseline run, candidate run)] or None, runs without a partner).

  The pairs, in round order, when every run of both sides has exactly one
  partner on the other side (same plan, configuration and round); None
  otherwise, and the unpaired test judges them all: a broken design is not
  patched by dropping runs.
  """
  keys = [[_pair_key(run) for run in runs]
          for runs in (baseline_runs, candidate_runs)]
  shared = (set(keys[0]) & set(keys[1])) - {None}
  alone = sum(key not in shared for side in keys for key in side)
  if alone or any(len(set(side)) < len(side) for side in keys):
    return None, alone
  partner = dict(zip(keys[1], candidate_runs))
  return [(run, partner[key]) for key, run in
          sorted(zip(keys[0], baseline_runs), key=lambda kv: kv[0])], 0


def _ips(runs):
  return [run['summary.images_per_sec'] for run in runs]


def _median(values):
  return float(np.median(values)) if len(values) else math.nan


def _steps_description(baseline_runs, candidate_runs):
  """Per-step medians of one run a side: a description, not evidence."""
  before = _median(np.concatenate([step_throughputs(r) for r in baseline_runs]))
  after = _median(np.concatenate([step_throughputs(r) for r in candidate_runs]))
  if math.isnan(before) or math.isnan(after):
    return ''
  return ('per-step medians %.1f -> %.1f img/s (%+.1f%%), a description of '
          'these processes only' % (before, after, 100 * (after / before - 1)))


def _single_run_row(row, baseline_runs, candidate_runs):
  """A side with one run: no test. The spread of the other side's runs, if
  it has several, plans how many are needed."""
  pairs, _ = pair_runs(baseline_runs, candidate_runs)
  row.test, row.verdict, row.paired = NO_TEST, stats.INCONCLUSIVE, bool(pairs)
  row.spread = (math.nan if pairs else stats.log_spread(
      _ips(baseline_runs), _ips(candidate_runs), paired=False))
  row.note = _join_notes(
      'one run on a side: no verdict, as the steps of one process are not '
      'independent samples', _steps_description(baseline_runs,
                                                candidate_runs))
  return row


def _compare_one(key, baseline_runs, candidate_runs, alpha, min_effect_pct):
  row = ConfigComparison(
      key=key, baseline_runs=len(baseline_runs),
      candidate_runs=len(candidate_runs),
      baseline_median=_median(_ips(baseline_runs)),
      candidate_median=_median(_ips(candidate_runs)),
      test=MISSING, result=None, verdict=MISSING)
  if not baseline_runs or not candidate_runs:
    row.note = 'only in %s' % ('candidate' if candidate_runs else 'baseline')
    return row
  if min(len(baseline_runs), len(candidate_runs)) < 2:
    return _single_run_row(row, baseline_runs, candidate_runs)
  pairs, alone = pair_runs(baseline_runs, candidate_runs)
  if pairs:
    baseline_runs = [b for b, _ in pairs]
    candidate_runs = [c for _, c in pairs]
  elif alone < len(baseline_runs) + len(candidate_runs):
    row.note = ('%d run(s) without a partner in the other side\'s rounds: '
                'judged unpaired' % alone)
  row.result = stats.compare_throughput(
      _ips(baseline_runs), _ips(candidate_runs), alpha, min_effect_pct,
      paired=bool(pairs))
  row.test, row.verdict = row.result.test, row.result.verdict
  row.spread, row.paired = row.result.spread, bool(pairs)
  if row.estimates_disagree:
    row.note = _join_notes(row.note, _disagreement_note(row))
  return row


def _disagreement_note(row):
  if row.paired:
    what = ('HL is the median of the Walsh averages of all %d pairs\' log '
            'ratios' % row.result.n_baseline)
  else:
    what = ('HL is the median of all %d candidate/baseline run ratios' % (
        row.result.n_baseline * row.result.n_candidate))
  return ('medians %+.1f%% but HL %+.1f%%: the medians compare one middle '
          'run of each side; %s, so it weighs every run. They part when the '
          'runs are spread or fall in clusters (see each run in the '
          'dashboard); the test and the verdict follow HL' % (
              row.median_change_pct, row.result.change_pct, what))


def _join_notes(*notes):
  return NOTE_SEPARATOR.join(note for note in notes if note)


def judge_family(rows, alpha, min_effect_pct):
  """Holm across the rows that have a test (stats.judge_family), then each
  row's power figures at alpha / k; returns that level."""
  tested = [row for row in rows if row.result is not None]
  for row, result in zip(tested, stats.judge_family(
      [row.result for row in tested], alpha, min_effect_pct)):
    row.result, row.verdict = result, result.verdict
    _for_metric(row)
  level = alpha / max(1, sum(row.test != MISSING for row in rows))
  for row in rows:
    if row.test != MISSING:
      _add_power(row, level, alpha)
  return level


def _add_power(row, level, alpha):
  row.detectable_pct = stats.detectable_slowdown_pct(
      row.spread, row.baseline_runs, row.candidate_runs, row.paired, level)
  row.runs_needed = stats.runs_for_change(
      row.spread, detection_power.TARGET_SLOWDOWN_PCT, row.paired, level)
  if row.verdict != stats.INCONCLUSIVE:
    return
  basis = ('to catch %d%%, from the spread observed'
           % detection_power.TARGET_SLOWDOWN_PCT if not math.isnan(row.spread)
           else 'the fewest with which the %s test can reach p < %.3g' % (
               'paired' if row.paired else 'unpaired', level))
  why = ('' if row.test == NO_TEST else
         'these runs cannot reach p < %g%s' % (
             alpha, ' after Holm\'s adjustment' if level < alpha else ''))
  row.note = _join_notes(row.note, why, 'inconclusive: %d %s needed (%s)' % (
      row.runs_needed, 'pairs of runs' if row.paired else 'runs a side',
      basis))


def compare_groups(frame, group_by, baseline, candidate,
                   alpha=stats.DEFAULT_ALPHA,
                   min_effect_pct=stats.DEFAULT_MIN_EFFECT_PCT,
                   allow_injected=False, judged=True, metric=THROUGHPUT,
                   drop_extremes=False):
  """Compares runs whose group_by value is baseline against candidate.

  drop_extremes: MLPerf's rule for time to train, each side's best and worst
  run left out before the test (sides of 3 runs or more; the rest are
  judged unpaired, their rounds no longer whole).

  judged=False leaves the verdicts to the caller's judge_family, for a
  family that spans several calls (bisect's configurations). Raises
  UsageError when a group has no usable runs (listing what exists), or when
  runs with an injected slowdown are among them and allow_injected is False.
  """
  if group_by not in GROUP_COLUMNS:
    raise UsageError('cannot group by %r; use one of %s.'
                     % (group_by, ', '.join(sorted(GROUP_COLUMNS))))
  baseline = normalise_group_value(group_by, baseline)
  candidate = normalise_group_value(group_by, candidate)
  runs = usable_runs(as_metric(frame, metric))
  present = available_values(runs, group_by)
  for role, value in (('baseline', baseline), ('candidate', candidate)):
    if value not in present:
      raise UsageError(
          'the %s group %r has no successful runs when grouping by %s. Groups '
          'with successful runs: %s. Pick one of these, or check the result '
          'folders you passed.' % (role, value, group_by,
                                   ', '.join(repr(v) for v in present) or 'none'))
  by_key = {}
  chosen = []
  for row in runs:
    value = group_value(row, group_by)
    if value in (baseline, candidate):
      side = by_key.setdefault(config_key(row, group_by), ([], []))
      side[0 if value == baseline else 1].append(row)
      chosen.append(row)
  if not allow_injected:
    injected_runs.refuse(chosen, group_by, baseline, candidate)
  rows = []
  for key, sides in sorted(by_key.items(), key=lambda kv: sortable_key(kv[0])):
    if drop_extremes:
      sides = tuple(_without_extremes(side) for side in sides)
    row = _compare_one(key, sides[0], sides[1], alpha, min_effect_pct)
    row.lower_is_better = not METRICS[metric][1]
    row.note = _join_notes(injected_runs.note('baseline', sides[0]),
                           injected_runs.note('candidate', sides[1]),
                           quiet_runs.disturbed_note('baseline', sides[0]),
                           quiet_runs.disturbed_note('candidate', sides[1]),
                           row.note)
    rows.append(row)
  level = judge_family(rows, alpha, min_effect_pct) if judged else alpha
  return Comparison(
      group_by=group_by, baseline=baseline, candidate=candidate, alpha=alpha,
      min_effect_pct=min_effect_pct, rows=rows, power_level=level,
      metric=metric)


def _without_extremes(runs):
  """``runs`` less its best and worst value (kept when fewer than 3)."""
  if len(runs) < 3:
    return runs
  ordered = sorted(runs, key=lambda run: run['summary.images_per_sec'])
  return ordered[1:-1]


def as_metric(frame, metric):
  """The frame with ``metric`` where the comparison reads a run's number
  (summary.images_per_sec), so one code path compares either."""
  if metric == THROUGHPUT:
    return frame
  if metric not in METRICS:
    raise UsageError('cannot compare %r; --metric is one of %s.' % (
        metric, ', '.join(sorted(METRICS))))
  return frame.assign(**{'summary.images_per_sec':
                         frame['summary.' + metric]})


_SWAPPED = {stats.REGRESSION: stats.IMPROVEMENT,
            stats.IMPROVEMENT: stats.REGRESSION}


def _for_metric(row):
  """A row judged on a lower-is-better metric: an increase regresses."""
  if row.lower_is_better:
    row.verdict = _SWAPPED.get(row.verdict, row.verdict)
  return row


def guess_group_by(frame, baseline, candidate):
  """--by auto: the one column (label or tf_version) holding both values."""
  runs = usable_runs(frame)
  matches = [group_by for group_by in ('label', 'tf_version', 'commit',
                                       'engine')
             if {baseline, candidate} <= set(available_values(runs, group_by))]
  if len(matches) == 1:
    return matches[0]
  if not matches:
    raise UsageError(
        'neither labels nor TF versions of the successful runs contain both '
        '%r and %r. Labels present: %s. TF versions present: %s. Pass values '
        'from these lists (and --by label or --by tf_version), or two result '
        'folders.' % (baseline, candidate,
                      ', '.join(repr(v) for v in available_values(runs, 'label')),
                      ', '.join(repr(v) for v in
                                available_values(runs, 'tf_version'))))
  raise UsageError('%s all contain %r and %r; say which to compare with '
                   '--by %s.' % (' and '.join(matches), baseline, candidate,
                                 ' or --by '.join(matches)))
