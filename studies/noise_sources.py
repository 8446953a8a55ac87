#!/usr/bin/env python3
"""Where does the run-to-run noise come from, and does any process setting
cut it? A/A pairs of one configuration under each candidate setting, taking
turns, judged by the spread `compare` sees.

  python studies/noise_sources.py [--model trivial] [--pairs 12]
      [--variants default,no_aslr,tcmalloc,...|runs_2x,runs_4x]
      [--target_seconds 5]
      [--work_dir DIR] [--output results/noise_sources.json]

studies/detection_power.py found the floor: two fresh processes of the same
run, one right after the other on a quiet machine, differ by ~9% (trivial)
in a typical pair, and their CPU seconds per image differ almost as much,
so the noise is the processes' own, not the machine's load. This study asks
which process-level setting (address-space layout, allocator, oneDNN,
threads) that spread comes from. Every run goes through the runner behind
`suite` and the power study (results/runner.py: pinned CPUs, fixed threads,
--num_batches calibrated to --target_seconds, disturbed runs repeated).
Each round runs every variant's pair back to back, the variants in a
rotated order and each pair's two runs in alternating order, so a drift of
the machine hits them alike.

Per variant it reports: the sd of the pairs' log ratios of images/sec (the
spread compare's paired test sees; with its chi-square 95% interval), the
same for CPU seconds per image, the sd within a process (the log ratio of
the mean step time of a run's second half to its first half: if it is far
below the pairs' sd, the noise comes from what differs between processes),
the slowdown 10 pairs would catch in 95% of trials at that spread, the
median throughput against the default's, Levene's test of its pairs'
spread against the default's (scipy), and the machine seconds a run took
(what a longer variant's spread is paid for with). The JSON holds every run
it used, and the CPU model they ran on.
"""

import argparse
import dataclasses
import json
import math
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd
import scipy.stats

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=g-import-not-at-top,wrong-import-position
import detection_power
from results import quiet_runs
from results import runner
from results import stats

LIBRARIES = '/usr/lib/%s-linux-gnu' % platform.machine()


@dataclasses.dataclass(frozen=True)
class Variant:
  """How a variant's process differs from the runner's default one."""
  wrapper: tuple = ()    # a command the interpreter runs under
  env: tuple = ()        # (name, value) pairs added to its environment
  flags: tuple = ()      # benchmark flags added
  needs: str = ''        # a file that must exist for the variant to run
  length: float = 1.0    # its runs' length, in --target_seconds


VARIANTS = {
    'default': Variant(),
    # The same addresses every run (personality ADDR_NO_RANDOMIZE): tells
    # whether the spread comes from where buffers land (cache sets, pages).
    'no_aslr': Variant(wrapper=('setarch', platform.machine(), '-R')),
    'tcmalloc': Variant(env=(('LD_PRELOAD', LIBRARIES +
                              '/libtcmalloc_minimal.so.4'),),
                        needs=LIBRARIES + '/libtcmalloc_minimal.so.4'),
    'jemalloc': Variant(env=(('LD_PRELOAD', LIBRARIES + '/libjemalloc.so.2'),),
                        needs=LIBRARIES + '/libjemalloc.so.2'),
    'onednn_off': Variant(env=(('TF_ENABLE_ONEDNN_OPTS', '0'),)),
    'one_inter_thread': Variant(flags=('--num_inter_threads=1',)),
    # Longer runs: would a run's mean average the noise away? Only if it
    # changes within seconds (then 4x the length halves the spread). It
    # did not (README, "How small a slowdown": 20 s runs spread as 5 s
    # ones). Not in the default set: they cost most of its time.
    'runs_2x': Variant(length=2.0),
    'runs_4x': Variant(length=4.0),
}
DEFAULT_VARIANTS = ('default', 'no_aslr', 'tcmalloc', 'jemalloc', 'onednn_off',
                    'one_inter_thread')


def _wrapper_script(variant, python, folder, name):
  """An executable that runs the interpreter under the variant's wrapper
  (the runner starts `PYTHON script ...`)."""
  if not variant.wrapper:
    return python
  path = os.path.join(folder, 'python-' + name)
  with open(path, 'w') as script:
    script.write('#!/bin/sh\nexec %s %s "$@"\n' % (
        ' '.join(variant.wrapper), python))
  os.chmod(path, 0o755)
  return path


def plan(variants, pairs, flags, python, folder, target_seconds=None):
  """Every run in order: round by round, each variant's A/A pair back to
  back; the variants' order rotates and each pair's sides alternate. A
  variant of another length runs variant.length * target_seconds."""
  runs = []
  names = list(variants)
  for index in range(pairs):
    turn = index % len(names)
    for name in names[turn:] + names[:turn]:
      variant = VARIANTS[name]
      sides = ['a', 'b'] if index % 2 == 0 else ['b', 'a']
      for side in sides:
        runs.append(runner.PlannedRun(
            name, list(flags) + list(variant.flags), side, index + 1, pairs,
            _wrapper_script(variant, python, folder, name),
            env=dict(variant.env),
            target_seconds=(variant.length * target_seconds
                            if target_seconds and variant.length != 1.0
                            else None)))
  return runs


def run_rows(outcomes):
  """One row per run: its variant, pair, side and what it measured."""
  rows = []
  for outcome in outcomes:
    for record in outcome.records:
      summary = record.get('summary') or {}
      steps = (record.get('timing') or {}).get('step_times_sec') or []
      half = len(steps) // 2
      rows.append({
          'variant': outcome.run.name, 'pair': outcome.run.repeat_index,
          'side': outcome.run.label, 'ok': outcome.ok,
          'images_per_sec': summary.get('images_per_sec'),
          'cpu_seconds_per_image': summary.get('cpu_seconds_per_image'),
          'other_cpu_share': summary.get('other_cpu_share'),
          'reruns': outcome.reruns, 'seconds': outcome.seconds,
          'halves_log_ratio': (float(np.log(np.mean(steps[half:]) /
                                            np.mean(steps[:half])))
                               if half >= 2 else None)})
  return pd.DataFrame(rows)


def sd_interval(values):
  """The sample sd and its chi-square 95% interval."""
  values = np.asarray(values, float)
  freedom = len(values) - 1
  if freedom < 1:
    return math.nan, math.nan, math.nan
  sd = float(np.std(values, ddof=1))
  low = sd * math.sqrt(freedom / scipy.stats.chi2.ppf(0.975, freedom))
  high = sd * math.sqrt(freedom / scipy.stats.chi2.ppf(0.025, freedom))
  return sd, low, high


def pair_log_ratios(rows, column, invert=False):
  """Per pair of a variant: log(b / a) of the column (a / b with invert,
  for a cost such as CPU seconds per image)."""
  wide = rows[rows['ok']].pivot_table(index='pair', columns='side',
                                      values=column, aggfunc='first')
  wide = wide.dropna()
  if wide.empty or not {'a', 'b'} <= set(wide.columns):
    return pd.Series(dtype=float)
  ratio = np.log(wide['b'] / wide['a'])
  return -ratio if invert else ratio


def figures(rows):
  """Per variant, the figures in the module docstring."""
  table = {}
  default = (pair_log_ratios(rows[rows['variant'] == 'default'],
                             'images_per_sec')
             if 'default' in set(rows['variant']) else pd.Series(dtype=float))
  default_median = rows[(rows['variant'] == 'default') &
                        rows['ok']]['images_per_sec'].median()
  for name, runs in rows.groupby('variant', sort=False):
    ratios = pair_log_ratios(runs, 'images_per_sec')
    sd, low, high = sd_interval(ratios)
    cpu_sd, _, _ = sd_interval(pair_log_ratios(runs, 'cpu_seconds_per_image',
                                               invert=True))
    within, _, _ = sd_interval(runs['halves_log_ratio'].dropna())
    levene = (float(scipy.stats.levene(ratios, default).pvalue)
              if name != 'default' and len(ratios) > 2 and len(default) > 2
              else None)
    caught = stats.detectable_slowdown_pct(sd, 10, 10, True, stats.DEFAULT_ALPHA,
                                           0.95)
    table[name] = {
        'pairs': int(len(ratios)),
        'pair_sd': _round(sd), 'pair_sd_95': [_round(low), _round(high)],
        'cpu_pair_sd': _round(cpu_sd), 'within_process_sd': _round(within),
        'caught_by_10_pairs_pct': _round(caught, 2),
        'median_vs_default_pct': _round(100.0 * (
            runs[runs['ok']]['images_per_sec'].median() / default_median - 1),
                                        2),
        'levene_p_vs_default': _round(levene),
        'reruns': int(runs['reruns'].sum()),
        # What a run costs: a longer run's smaller spread is paid for here.
        'median_run_seconds': _round(runs[runs['ok']]['seconds'].median()
                                     if 'seconds' in runs else None, 1),
    }
  return table


def _cpu_model(outcomes):
  """The CPU the runs ran on, from their records (the same host for all:
  the figures mean little across hosts)."""
  return ', '.join(sorted({
      (record.get('environment') or {}).get('cpu_model') or '?'
      for outcome in outcomes for record in outcome.records})) or None


def _round(value, digits=4):
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return None
  return round(float(value), digits)


def report(table):
  frame = pd.DataFrame(table).T
  frame = frame[['pairs', 'pair_sd', 'pair_sd_95', 'cpu_pair_sd',
                 'within_process_sd', 'caught_by_10_pairs_pct',
                 'median_vs_default_pct', 'levene_p_vs_default', 'reruns',
                 'median_run_seconds']]
  return frame.to_string()


def build_parser():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--model', default='trivial',
                      choices=sorted(detection_power.MODELS))
  parser.add_argument('--pairs', type=int, default=12,
                      help='A/A pairs per variant')
  parser.add_argument('--variants', default=','.join(DEFAULT_VARIANTS),
                      help='comma-separated subset of %s' % ', '.join(VARIANTS))
  parser.add_argument('--target_seconds', type=float, default=5.0)
  parser.add_argument('--work_dir', help='where the runs write (default: a '
                      'temporary folder, kept)')
  parser.add_argument('--output', default=os.path.join(
      REPO, 'results', 'noise_sources.json'))
  return parser


def main(argv=None):
  args = build_parser().parse_args(argv)
  names = [name.strip() for name in args.variants.split(',') if name.strip()]
  unknown = [name for name in names if name not in VARIANTS]
  missing = [VARIANTS[name].needs for name in names
             if name in VARIANTS and VARIANTS[name].needs
             and not os.path.exists(VARIANTS[name].needs)]
  if unknown or missing or args.pairs < 3:
    print('noise_sources: %s. Choose variants from %s, install what they '
          'preload (apt-get install libtcmalloc-minimal4 libjemalloc2) and '
          'ask for at least 3 pairs.' % (
              '; '.join(['unknown variants: ' + ', '.join(unknown)] * bool(
                  unknown) + ['missing: ' + ', '.join(missing)] * bool(
                      missing) + ['--pairs %d' % args.pairs] * (
                          args.pairs < 3)),
              ', '.join(VARIANTS)), file=sys.stderr)
    return 2
  folder = args.work_dir or tempfile.mkdtemp(prefix='noise_sources_')
  os.makedirs(folder, exist_ok=True)
  flags = (detection_power.MODELS[args.model] + detection_power.COMMON_FLAGS)
  noise = quiet_runs.NoiseControl(target_seconds=args.target_seconds)
  print('noise_sources: %s, %d pairs of each of %s, runs in %s' % (
      args.model, args.pairs, ', '.join(names), folder), flush=True)
  outcomes = runner.run_all(plan(names, args.pairs, flags, sys.executable,
                                 folder, args.target_seconds), folder,
                            python=sys.executable, noise=noise)
  rows = run_rows(outcomes)
  table = figures(rows)
  print(report(table))
  commit = subprocess.run(['git', '-C', REPO, 'rev-parse', '--short', 'HEAD'],
                          capture_output=True, text=True, check=False)
  data = {'source': {'command': 'python studies/noise_sources.py ' + ' '.join(
              argv if argv is not None else sys.argv[1:]),
                     'commit': commit.stdout.strip(), 'model': args.model,
                     'cpu_model': _cpu_model(outcomes),
                     'target_seconds': args.target_seconds},
          'variants': table, 'runs': rows.to_dict(orient='records')}
  with open(args.output, 'w') as out:
    json.dump(data, out, indent=1)
  print('wrote %s' % args.output)
  return 0


if __name__ == '__main__':
  sys.exit(main())
