"""The detection-power study's figures, from its table of runs alone.

studies/detection_power.py runs the trials and keeps one row per run record
(RUNS_CSV: results/detection_power_runs.csv.gz); everything it reports is
computed here from that table, so `--recompute` on the table gives the same
figures, and the same JSON, as the measurement did.

The table has the columns `compare` reads (results/store.py's names:
`label`, `status`, `summary.images_per_sec`, `sequence.*`, `config.*`, ...)
and the study's own (STUDY_COLUMNS): which trial a run belongs to, the
slowdown its candidate side got, what it cost.

A trial is one plan of interleaved rounds, baseline side against candidate
side. Each trial, cut to its first n rounds (what a user with n runs a side
would have), is judged by `compare`'s own code (comparison.compare_groups:
the paired test, Holm across a suite's configurations, the same alpha and
--min_effect). Then, per trial set and n:

  false alarms  A/A trials (no slowdown) called a `regression` (what makes
                `compare` exit 1); `no change`, `inconclusive` or an
                `improvement` is not one;
  power         slowed trials called a `regression`;

each a count of trials with its 95% Wilson interval.
"""

import math
import os

import numpy as np
import pandas as pd
import scipy.stats

from results import comparison
from results import detection_power
from results import stats
from results.errors import UsageError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS_CSV = os.path.join(REPO, 'results', 'detection_power_runs.csv.gz')
RECOMPUTE_COMMAND = 'python studies/detection_power.py --recompute %s'
BASELINE, CANDIDATE = 'baseline', 'candidate'
SUITE_PREFIX = 'suite:'
# Run counts a side reported, each the first n rounds of every trial; the
# paired test cannot reach p < 0.05 with 5 pairs (stats.fewest_runs), so 5
# shows what a user with 5 runs gets: no verdict.
NS = (5, 6, 8, 10)
CONFIDENCE = 0.95
INTERVAL_METHOD = 'wilson'
# The goals (#27): false alarms at most 5% per configuration with the
# interval's upper end at most 8%; a 5% slowdown caught in this share of
# trials with at most MAX_RUNS_FOR_GOAL runs a side.
FALSE_ALARMS_UPPER = 0.08
POWER_GOALS = {'resnet50': 0.95, 'resnet20': 0.95, 'trivial': 0.80}
MAX_RUNS_FOR_GOAL = 10
# Power the noise floor's "smallest slowdown caught" is quoted at.
FLOOR_POWER = 0.95

STUDY_COLUMNS = ('trial', 'trial_set', 'slowdown_pct', 'run_seconds', 'reruns',
                 'trial_seconds', 'study_mode', 'study_command')
RECORD_COLUMNS = tuple(dict.fromkeys(
    ('label', 'status', 'started_at', 'injected_slowdown', 'cluster_run_id',
     'summary.images_per_sec', 'summary.cpu_seconds_per_image',
     'summary.other_cpu_share', 'sequence.plan', 'sequence.round',
     'sequence.position', 'sequence.config', 'config.num_batches',
     'config.job_name', 'config.task_index', 'environment.tf_version',
     'environment.harness_version', 'environment.cpu_model')
    + tuple('config.' + field for field in comparison.CONFIG_KEY_FIELDS)))
COLUMNS = STUDY_COLUMNS + RECORD_COLUMNS
# Read back as text whatever they look like (a plan id of digits and one
# `e` would otherwise parse as a float).
TEXT_COLUMNS = ('trial', 'trial_set', 'study_mode', 'study_command', 'label',
                'status', 'started_at', 'cluster_run_id', 'sequence.plan',
                'sequence.config', 'config.job_name', 'environment.tf_version',
                'environment.harness_version', 'environment.cpu_model')


def read_runs(path):
  return pd.read_csv(path, dtype={c: str for c in TEXT_COLUMNS})


def write_runs(runs, path):
  """The table as gzip-compressed CSV (atomically: a crash mid-study leaves
  the last complete table)."""
  partial = path + '.partial'
  runs.reindex(columns=list(COLUMNS)).to_csv(
      partial, index=False, compression={'method': 'gzip', 'mtime': 0})
  os.replace(partial, path)


def proportion(count, trials):
  """{count, trials, rate, low, high}: the share with its Wilson interval
  (scipy); None without trials."""
  if not trials:
    return None
  count, trials = int(count), int(trials)
  interval = scipy.stats.binomtest(count, trials).proportion_ci(
      CONFIDENCE, method=INTERVAL_METHOD)
  return {'count': count, 'trials': trials, 'rate': round(count / trials, 4),
          'low': round(float(interval.low), 4),
          'high': round(float(interval.high), 4)}


def trial_verdict(judged):
  """One verdict per trial: `regression` when any configuration is one
  (after Holm, as `compare` exits 1), else the first of the others found
  in that order."""
  found = {row.verdict for row in judged.rows}
  for verdict in (stats.REGRESSION, stats.IMPROVEMENT, stats.NO_CHANGE,
                  stats.INCONCLUSIVE):
    if verdict in found:
      return verdict
  return comparison.MISSING


def judge_trials(runs, ns, alpha=stats.DEFAULT_ALPHA,
                 min_effect_pct=stats.DEFAULT_MIN_EFFECT_PCT):
  """One row per trial and n: compare's verdict on the trial's first n
  rounds, and the spread it saw (one configuration's; nan for a suite)."""
  rows = []
  for trial, trial_runs in runs.groupby('trial', sort=False):
    first = trial_runs.iloc[0]
    for n in ns:
      row = {'trial': trial, 'trial_set': first['trial_set'],
             'slowdown_pct': float(first['slowdown_pct']), 'n': n,
             'verdict': comparison.MISSING, 'paired': False,
             'spread': math.nan}
      try:
        judged = comparison.compare_groups(
            trial_runs[trial_runs['sequence.round'] <= n], 'label', BASELINE,
            CANDIDATE, alpha, min_effect_pct, allow_injected=True)
      except UsageError:   # a side with no successful run: no verdict
        rows.append(row)
        continue
      row['verdict'] = trial_verdict(judged)
      if len(judged.rows) == 1:
        row['paired'] = judged.rows[0].paired
        row['spread'] = judged.rows[0].spread
      rows.append(row)
  return pd.DataFrame(rows, columns=['trial', 'trial_set', 'slowdown_pct',
                                     'n', 'verdict', 'paired', 'spread'])


def count_regressions(verdicts):
  """Per trial set, slowdown and n: the trials judged and those called a
  `regression` (false alarms where the slowdown is 0, power elsewhere)."""
  judged = verdicts[verdicts['verdict'] != comparison.MISSING]
  return judged.groupby(['trial_set', 'slowdown_pct', 'n']).agg(
      trials=('verdict', 'size'),
      regressions=('verdict', lambda v: int((v == stats.REGRESSION).sum())))


def realised_slowdown_pct(runs):
  """100 (1 - median of the candidate side's runs / median of the baseline
  side's), the runs of every trial given pooled: the slowdown the runs
  show, not the one injected (the harness's work between steps is not
  slowed, and the machine moves the runs)."""
  usable = comparison.usable_runs(runs)
  medians = {side: np.median([run['summary.images_per_sec'] for run in usable
                              if run['label'] == side])
             for side in (BASELINE, CANDIDATE)}
  return round(100.0 * (1.0 - medians[CANDIDATE] / medians[BASELINE]), 2)


def machine_minutes(runs, n):
  """Mean machine minutes a trial's first n rounds took: its whole plan
  (calibration and disturbed runs included) less the later rounds' runs; a
  disturbed try is counted as long as the run kept."""
  minutes = []
  for _, trial_runs in runs.groupby('trial', sort=False):
    processes = trial_runs.drop_duplicates('sequence.position')
    later = processes[processes['sequence.round'] > n]
    spent = trial_runs['trial_seconds'].iloc[0] - float(
        (later['run_seconds'] * (1 + later['reruns'])).sum())
    minutes.append(spent / 60.0)
  return round(float(np.mean(minutes)), 2)


def noise_floor(verdicts, alpha=stats.DEFAULT_ALPHA):
  """The spread compare saw in A/A trials at the largest n (sd of the
  pairs' log ratios, pooled over trials as the root mean variance) and the
  smallest slowdown it catches at FLOOR_POWER; None without paired A/A
  trials."""
  largest = verdicts['n'].max()
  spreads = verdicts[(verdicts['slowdown_pct'] == 0) & verdicts['paired']
                     & (verdicts['n'] == largest)]['spread'].dropna()
  if spreads.empty:
    return None
  spread = math.sqrt(float((spreads ** 2).mean()))
  caught = stats.detectable_slowdown_pct(spread, largest, largest, True,
                                         alpha, FLOOR_POWER)
  return {'spread': round(spread, 5), 'trials': int(len(spreads)),
          'n': int(largest),
          'caught_at_95_pct': None if math.isnan(caught) else round(caught, 2),
          'pairs_for_5pct_at_95': stats.runs_for_change(
              spread, detection_power.TARGET_SLOWDOWN_PCT, True, alpha,
              FLOOR_POWER)}


def aa_pairs(runs):
  """What the A/A trials' pairs show beside compare's spread (noise_floor):
  the same spread of CPU seconds per image, which other processes do not
  move (a floor that holds there too is the processes' own, not the
  machine's load); the largest difference of a single pair; and the CPU
  share other processes took during the runs. None without A/A trials."""
  aa = runs[(runs['slowdown_pct'] == 0) & (runs['status'] == 'ok')]
  if aa.empty:
    return None
  throughput, cpu = [], []
  largest = 0.0
  for _, trial in aa.groupby('trial', sort=False):
    side = {label: trial[trial['label'] == label].drop_duplicates(
        'sequence.round').set_index('sequence.round')
            for label in (BASELINE, CANDIDATE)}
    rounds = side[BASELINE].index.intersection(side[CANDIDATE].index)
    if len(rounds) < 2:
      continue
    ratio = np.log(side[CANDIDATE].loc[rounds, 'summary.images_per_sec'] /
                   side[BASELINE].loc[rounds, 'summary.images_per_sec'])
    cost = np.log(
        side[BASELINE].loc[rounds, 'summary.cpu_seconds_per_image'] /
        side[CANDIDATE].loc[rounds, 'summary.cpu_seconds_per_image'])
    throughput.append(float(np.var(ratio, ddof=1)))
    if cost.notna().all():
      cpu.append(float(np.var(cost, ddof=1)))
    largest = max(largest, float(np.abs(np.expm1(ratio)).max()))
  share = aa['summary.other_cpu_share'].dropna()
  pooled = lambda v: round(math.sqrt(float(np.mean(v))), 5) if v else None  # pylint: disable=unnecessary-lambda-assignment
  return {'trials': len(throughput),
          'spread': pooled(throughput),
          'cpu_seconds_per_image_spread': pooled(cpu),
          'largest_pair_pct': round(100.0 * largest, 1),
          'other_cpu_share_median': _rounded(share.median(), 3),
          'other_cpu_share_max': _rounded(share.max(), 3)}


def _by_n(counts, trial_set, slowdown_pct, ns):
  return {str(n): proportion(*_count(counts, trial_set, slowdown_pct, n))
          for n in ns}


def _count(counts, trial_set, slowdown_pct, n):
  key = (trial_set, float(slowdown_pct), n)
  if key not in counts.index:
    return 0, 0
  return counts.loc[key, 'regressions'], counts.loc[key, 'trials']


def false_alarms_met(by_n):
  """The false-alarm goal, at every n measured (a model's, and the suite's
  family-wise): the rate at most 5% and its interval's upper end at most
  8%."""
  shares = [p for p in by_n.values() if p is not None]
  return bool(shares) and all(
      p['rate'] <= detection_power.MAX_FALSE_ALARMS
      and p['high'] <= FALSE_ALARMS_UPPER for p in shares)


def trials_to_show(alarms=0, upper=FALSE_ALARMS_UPPER, most=10000):
  """The fewest trials whose interval's upper end, with ``alarms`` false
  alarms among them, is at most ``upper``: what showing the goal takes if
  no trial after those seen so far cries wolf (45 with none, 67 with one,
  87 with two)."""
  return next((t for t in range(max(1, alarms), most)
               if proportion(alarms, t)['high'] <= upper), None)


def _most_alarms(by_n):
  """The false alarms of the n that had most: the goal holds at every n."""
  return max((p['count'] for p in by_n.values() if p is not None),
             default=0)


def goals(model, figures):
  """Whether the model meets the issue's goals, and where."""
  met_false = false_alarms_met(figures['false_alarms'])
  goal = POWER_GOALS.get(model)
  caught = figures['power'].get('%g' % detection_power.TARGET_SLOWDOWN_PCT,
                                {})
  best = max(((p['rate'], int(n), p['trials'], p['high'])
              for n, p in caught.items()
              if p is not None and int(n) <= MAX_RUNS_FOR_GOAL),
             default=None)
  if goal is None or best is None:
    met_power = None
  elif best[3] < goal:
    met_power = False  # even the interval's upper end falls short
  elif best[2] < detection_power.MIN_TRIALS:
    # Too few trials to show it met, as they plan nothing
    # (detection_power.MIN_TRIALS).
    met_power = None
  else:
    met_power = best[0] >= goal
  return {'false_alarms_met': met_false,
          'aa_trials_to_show_with_no_more_alarms': trials_to_show(
              _most_alarms(figures['false_alarms'])),
          'power_goal': goal,
          'power_met': met_power,
          # Power is for the slowdown the runs showed, which the injected
          # 5% only aims at (realised_slowdown_pct).
          'power_realised_slowdown_pct': figures.get(
              'realised_slowdown_pct', {}).get(
                  '%g' % detection_power.TARGET_SLOWDOWN_PCT),
          'best_power': None if best is None else {
              'rate': best[0], 'n': best[1], 'trials': best[2]}}


def model_figures(model, runs, verdicts, counts, ns):
  slowdowns = sorted(float(s) for s in runs['slowdown_pct'].unique())
  trials = runs.drop_duplicates('trial')
  figures = {
      'trials': {'%g' % s: int((trials['slowdown_pct'] == s).sum())
                 for s in slowdowns},
      'false_alarms': _by_n(counts, model, 0, ns) if 0 in slowdowns else {},
      'power': {'%g' % s: _by_n(counts, model, s, ns)
                for s in slowdowns if s > 0},
      'verdicts': {'%g' % s: {str(n): {
          verdict: int(count) for verdict, count in verdicts[
              (verdicts['slowdown_pct'] == s) & (verdicts['n'] == n)][
                  'verdict'].value_counts().sort_index().items()}
                              for n in ns} for s in slowdowns},
      'realised_slowdown_pct': {
          '%g' % s: realised_slowdown_pct(runs[runs['slowdown_pct'] == s])
          for s in slowdowns},
      'machine_minutes_per_verdict': {str(n): machine_minutes(runs, n)
                                      for n in ns},
      'noise_floor': noise_floor(verdicts),
      'aa_pairs': aa_pairs(runs),
      'num_batches': sorted({int(b) for b in
                             runs['config.num_batches'].dropna()}),
      'median_run_seconds': round(float(runs.drop_duplicates(
          ['trial', 'sequence.position'])['run_seconds'].median()), 1),
  }
  figures['goals'] = goals(model, figures)
  answers = [n for n in ns if (detection_power.smallest_detectable_pct(
      figures, n) or math.inf) <= detection_power.TARGET_SLOWDOWN_PCT]
  figures['smallest_n_for_5pct'] = min(answers) if answers else None
  return figures


def suite_figures(trial_set, runs, counts, ns):
  family = _by_n(counts, trial_set, 0, ns)
  return {
      'file': trial_set[len(SUITE_PREFIX):],
      'configurations': sorted(runs['sequence.config'].dropna().unique()),
      'trials': int(runs['trial'].nunique()),
      'family_false_alarms': family,
      'machine_minutes_per_verdict': {str(n): machine_minutes(runs, n)
                                      for n in ns},
      'goals': {'family_false_alarms_met': false_alarms_met(family),
                'trials_to_show_with_no_more_alarms': trials_to_show(
                    _most_alarms(family))}}


def _rounded(value, digits):
  return None if pd.isna(value) else round(float(value), digits)


def _joined(values):
  return ', '.join(sorted({str(v) for v in values.dropna()})) or None


def shown_path(path):
  """A path as the figures name it: from the repository's root when inside
  it (the same on every checkout), else absolute."""
  inside = os.path.relpath(os.path.abspath(path), REPO)
  return os.path.abspath(path) if inside.startswith(os.pardir) else inside


def source(runs, runs_path):
  """Where the figures come from, as the table records it."""
  mode = 'quick' if (runs['study_mode'] == 'quick').any() else 'full'
  started = pd.to_datetime(runs['started_at'], utc=True, format='ISO8601')
  stamp = '%Y-%m-%d %H:%M UTC'
  table = shown_path(runs_path)
  processes = runs.drop_duplicates(['trial', 'sequence.position'])
  return {
      'mode': mode,
      # Every command whose trials the table holds (a --resume may add
      # models or trials to an earlier run's), in the order they ran.
      'command': ' ; '.join(dict.fromkeys(runs['study_command'].dropna())),
      'recompute': RECOMPUTE_COMMAND % table,
      'runs_table': table,
      'date': started.max().strftime(stamp),
      'first_run': started.min().strftime(stamp),
      'cpu_model': _joined(runs['environment.cpu_model']),
      'tf_version': _joined(runs['environment.tf_version']),
      'harness_version': _joined(runs['environment.harness_version']),
      'runs': int(len(processes)),
      'failed_runs': int((runs['status'] != 'ok').sum()),
      # Runs set aside and run again, and the tries that took: one run
      # tried three times is one run, two tries.
      'disturbed_runs': int((processes['reruns'] > 0).sum()),
      'disturbed_reruns': int(processes['reruns'].sum()),
      # How quiet the machine was: the share of the CPU other processes
      # took during a kept run's timed loop, median over the runs.
      'median_other_cpu_share': _rounded(
          runs['summary.other_cpu_share'].median(), 3),
      'note': ('a --quick check of the machinery: too few trials, not a '
               'measurement to quote' if mode == 'quick' else
               'fresh interleaved trials, each judged as compare judges it'),
  }


def figures(runs, runs_path, alpha=stats.DEFAULT_ALPHA,
            min_effect_pct=stats.DEFAULT_MIN_EFFECT_PCT):
  """The whole JSON (results/detection_power.py's format) from the runs."""
  rounds = int(runs['sequence.round'].max())
  ns = sorted({n for n in NS if n <= rounds} | {rounds})
  verdicts = judge_trials(runs, ns, alpha, min_effect_pct)
  counts = count_regressions(verdicts)
  data = {
      'source': source(runs, runs_path),
      'settings': {
          'alpha': alpha, 'min_effect_pct': min_effect_pct, 'ns': ns,
          'rounds': rounds,
          'slowdowns_pct': sorted(float(s) for s in
                                  runs['slowdown_pct'].unique() if s > 0),
          'interval': '%g%% %s (scipy.stats.binomtest)' % (
              100 * CONFIDENCE, INTERVAL_METHOD),
          'detect_at': detection_power.DETECT_AT,
          'max_false_alarms': detection_power.MAX_FALSE_ALARMS,
          'false_alarms_upper': FALSE_ALARMS_UPPER,
          'power_goals': POWER_GOALS, 'max_runs_for_goal': MAX_RUNS_FOR_GOAL},
      'models': {}}
  for trial_set, set_runs in runs.groupby('trial_set', sort=True):
    set_verdicts = verdicts[verdicts['trial_set'] == trial_set]
    if trial_set.startswith(SUITE_PREFIX):
      data['suite'] = suite_figures(trial_set, set_runs, counts, ns)
    else:
      data['models'][trial_set] = model_figures(trial_set, set_runs,
                                                set_verdicts, counts, ns)
  return data


def _cell(share):
  if share is None:
    return 'n/a'
  return '%.0f%% [%.0f-%.0f%%] %d/%d' % (
      100 * share['rate'], 100 * share['low'], 100 * share['high'],
      share['count'], share['trials'])


def report(data):
  """The printed summary: per model its table against the goals; where a
  goal is not met, the noise floor and what it allows."""
  ns = data['settings']['ns']
  source = data['source']
  lines = ['%d runs from %s to %s on %s (%d failed); %d run(s) set aside and '
           'run again because other processes shared the CPU (tries set '
           'aside: %d); other processes took a median %.1f%% of the CPU' % (
               source['runs'], source['first_run'], source['date'],
               source['cpu_model'], source['failed_runs'],
               source['disturbed_runs'], source['disturbed_reruns'],
               100 * (source['median_other_cpu_share'] or 0))]
  for model, figures in data['models'].items():
    lines.append('%s: %s trials (by slowdown %%: %s); machine minutes per '
                 'verdict %s' % (
                     model, sum(figures['trials'].values()),
                     ', '.join('%s: %d' % kv
                               for kv in figures['trials'].items()),
                     _minutes(figures)))
    table = {}
    if figures['false_alarms']:
      table['false alarms (A/A, real %.1f%%)' % figures[
          'realised_slowdown_pct']['0']] = [
              _cell(figures['false_alarms'][str(n)]) for n in ns]
    for pct, by_n in figures['power'].items():
      table['caught %s%% (real %.1f%%)' % (
          pct, figures['realised_slowdown_pct'][pct])] = [
              _cell(by_n[str(n)]) for n in ns]
    lines.append(pd.DataFrame(table, index=['n=%d' % n for n in ns]).T
                 .to_string())
    lines.extend(_goal_lines(model, figures))
  if 'suite' in data:
    suite = data['suite']
    lines.append('suite %s (%d configurations), A/A, any configuration '
                 'called a regression after Holm: %s; machine minutes per '
                 'verdict %s' % (
                     suite['file'], len(suite['configurations']), ', '.join(
                         'n=%s %s' % (n, _cell(share)) for n, share in
                         suite['family_false_alarms'].items()),
                     _minutes(suite)))
    lines.append(_false_alarm_goal_line(
        'family-wise false alarms', suite['goals']['family_false_alarms_met'],
        suite['trials'],
        suite['goals']['trials_to_show_with_no_more_alarms']))
  return '\n'.join(lines)


def _minutes(figures):
  return ', '.join('%.1f at n=%s' % (m, n) for n, m in
                   figures['machine_minutes_per_verdict'].items())


def _false_alarm_goal_line(what, met, trials, showing):
  line = '  goal: %s <= %.0f%% (upper end <= %.0f%%) at every n: %s' % (
      what, 100 * detection_power.MAX_FALSE_ALARMS, 100 * FALSE_ALARMS_UPPER,
      'met' if met else 'NOT met')
  if not met and showing and trials < showing:
    line += (' (%d trials; with no more false alarms, %d show the upper '
             'end <= %.0f%%)' % (trials, showing, 100 * FALSE_ALARMS_UPPER))
  return line


def _goal_lines(model, figures):
  met = figures['goals']
  lines = [_false_alarm_goal_line(
      'false alarms', met['false_alarms_met'],
      figures['trials'].get('0', 0),
      met.get('aa_trials_to_show_with_no_more_alarms'))]
  if met['power_goal'] is None:
    lines.append('  goal: none set for catching %d%% on %s' % (
        detection_power.TARGET_SLOWDOWN_PCT, model))
  else:
    best = met['best_power']
    lines.append('  goal: %d%% caught in >= %.0f%% of trials at <= %d runs '
                 'a side: %s' % (
                     detection_power.TARGET_SLOWDOWN_PCT,
                     100 * met['power_goal'], MAX_RUNS_FOR_GOAL,
                     'not measured (no trial slowed by %d%%)'
                     % detection_power.TARGET_SLOWDOWN_PCT if best is None
                     else '%s (best %.0f%% at n=%d, %d trials; the '
                     'slowdown realised: %.1f%%)' % (
                         'not shown: fewer than %d trials' %
                         detection_power.MIN_TRIALS
                         if met['power_met'] is None else
                         'met' if met['power_met'] else 'NOT met',
                         100 * best['rate'], best['n'], best['trials'],
                         met['power_realised_slowdown_pct'])))
  if met['false_alarms_met'] and met['power_met'] is not False:
    return lines
  floor = figures['noise_floor']
  if floor is None:
    lines.append('  noise floor: no paired A/A trial to measure it')
    return lines
  lines.append(
      '  noise floor: sd of the pairs\' log ratios in A/A trials %.2f%% (%d '
      'trial(s), n=%d); at that spread %s is caught in %.0f%% of trials with '
      '%d runs a side; %d%% needs %d pairs' % (
          100 * floor['spread'], floor['trials'], floor['n'],
          'no slowdown' if floor['caught_at_95_pct'] is None else
          'a %.1f%% slowdown' % floor['caught_at_95_pct'],
          100 * FLOOR_POWER, floor['n'], detection_power.TARGET_SLOWDOWN_PCT,
          floor['pairs_for_5pct_at_95']))
  pairs = figures.get('aa_pairs')
  if pairs and pairs['cpu_seconds_per_image_spread'] is not None:
    lines.append(
        '  the same pairs (all rounds): sd %.2f%% in images/sec, %.2f%% in '
        'CPU seconds per image (blind to other processes); the largest '
        'single pair differed by %.1f%%; other processes took a median '
        '%.1f%%, at most %.1f%%, of the CPU during these runs' % (
            100 * pairs['spread'],
            100 * pairs['cpu_seconds_per_image_spread'],
            pairs['largest_pair_pct'],
            100 * (pairs['other_cpu_share_median'] or 0),
            100 * (pairs['other_cpu_share_max'] or 0)))
  return lines
