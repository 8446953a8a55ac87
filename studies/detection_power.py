#!/usr/bin/env python3
"""How often does `compare` catch a real slowdown, and how often does it cry
wolf? Measured on fresh interleaved trials of this machine, judged as
`compare` judges them.

  python studies/detection_power.py [--quick] [--models trivial,resnet20]
      [--rounds 10] [--aa_trials 100] [--trials 40] [--slowdowns 5]
      [--target_seconds 10] [--cpus 0-1] [--max_other_cpu_share 0.1]
      [--max_reruns 2] [--suite examples/cpu_quick_suite.toml
      --suite_trials 20] [--output results/detection_power.json]
      [--runs results/detection_power_runs.csv.gz] [--work_dir DIR]
      [--resume] [--timeout 900] [-- extra benchmark flags]
  python studies/detection_power.py --recompute results/detection_power_runs.csv.gz

A trial is one plan of `--rounds` paired rounds through the runner that
`suite`, `matrix` and `bisect` use (results/runner.py run_all, with its
noise control: runs pinned to one CPU set, --num_batches calibrated to
--target_seconds, disturbed runs set aside and run again; the two sides in
the order A B, B A, ...). Both sides run the same real configuration; the
candidate side is slowed by the test-only injected slowdown
(tf_cnn_benchmarks/test_hooks/injected_slowdown.py: idle time after each
timed step, throughput x (1 - s/100) for s%) in a slowed trial, and not at
all in an A/A trial. The trials of every model and slowdown take turns, so
a drift of the machine hits them alike.

Each trial, cut to its first n rounds (n = 5, 6, 8, 10: what a user with n
runs a side has), is judged by compare's own code (the paired test, the
same alpha and --min_effect, Holm over a suite): studies/power_figures.py.
It reports per model and n the false alarms (A/A trials called a
regression) and the power (slowed trials called one), each with its 95%
Wilson interval, the slowdown the runs really showed, and the machine
minutes a verdict took, against the issue's goals; where a goal is not met,
the noise floor (the spread of the pairs' log ratios in A/A trials) and the
smallest slowdown that spread lets 10 pairs catch in 95% of trials.
--suite adds A/A trials of a whole suite: the share in which any of its
configurations was called a regression after Holm.

Every run record stays in --work_dir (one folder per trial, for `compare`
and the dashboard). The table of runs (--runs, gzip CSV: the columns compare
reads plus trial, slowdown, seconds and reruns) is rewritten after every
trial; --resume skips the trials it holds. The figures (--output) are
computed from that table alone, so `--recompute TABLE` gives the same JSON.

--quick (trivial, 1 A/A and 1 trial slowed 10%, 6 rounds, 1 s runs, no
reruns: ~26 short runs) checks the machinery; its figures say they are not
a measurement to quote.
"""

import argparse
import dataclasses
import os
import shlex
import sys
import tempfile
import time

import pandas as pd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# pylint: disable=g-import-not-at-top,wrong-import-position
import power_figures
from results import detection_power
from results import injected_runs
from results import quiet_runs
from results import runner
from results import store
from results import suite
from results import suite_file
from results.errors import UsageError, report_usage_error

# The configurations measured; --num_batches comes from --target_seconds.
# ResNet-50 at a small batch, so a 2-core machine makes a step in ~1 s.
MODELS = {
    'trivial': ['--model=trivial', '--batch_size=32'],
    'lenet': ['--model=lenet', '--batch_size=32'],
    'resnet20': ['--model=resnet20', '--data_name=cifar10', '--batch_size=32'],
    'resnet50': ['--model=resnet50', '--batch_size=4'],
}
COMMON_FLAGS = ['--device=cpu', '--num_warmup_batches=5']
# The models the issue sets goals for (power_figures.POWER_GOALS). A/A
# trials: ~100 keep the false-alarm interval's upper end near 8% when the
# rate is alpha/2; 40 slowed trials put 95% power within +-5 points.
FULL = dict(models=['trivial', 'resnet20', 'resnet50'], rounds=10,
            aa_trials=100, trials=40, slowdowns=[5.0], target_seconds=10.0,
            max_reruns=quiet_runs.DEFAULT_MAX_RERUNS, suite_trials=20)
# Real runs, as short as a check can be: 6 rounds is the fewest pairs that
# can reach a verdict; no reruns, as a CI machine is rarely quiet.
QUICK = dict(models=['trivial'], rounds=6, aa_trials=1, trials=1,
             slowdowns=[10.0], target_seconds=1.0, max_reruns=0,
             suite_trials=1)


@dataclasses.dataclass(frozen=True)
class Trial:
  trial_id: str          # '<trial set>/<slowdown %>/<index>'
  trial_set: str         # a model, or 'suite:<file>'
  slowdown_pct: float    # of the candidate side; 0: A/A
  configs: tuple         # suite_file.SuiteConfig, run on both sides


def injected_fraction(pct):
  """Idle fraction of each step that lowers throughput by pct%."""
  return pct / (100.0 - pct)


def plan_trials(model_configs, aa_trials, trials, slowdowns, suite_set=None,
                suite_trials=0):
  """Every trial, the kinds taking turns: trial k of a kind with c trials
  sits at (k + 1/2) / c of the way, so each kind is spread evenly over the
  study and a drift of the machine hits them alike."""
  kinds = []
  for name, config in model_configs.items():
    kinds.append((name, 0.0, (config,), aa_trials))
    kinds += [(name, pct, (config,), trials) for pct in slowdowns]
  if suite_set:
    kinds.append((suite_set[0], 0.0, tuple(suite_set[1]), suite_trials))
  placed = []
  for order, (trial_set, pct, configs, count) in enumerate(kinds):
    for index in range(count):
      placed.append(((index + 0.5) / count, order, Trial(
          '%s/%g/%d' % (trial_set, pct, index), trial_set, pct, configs)))
  return [trial for _, _, trial in sorted(placed, key=lambda p: p[:2])]


def trial_runs(trial, rounds):
  """The trial's plan: both sides, a round at a time, in turns."""
  slowed = ({injected_runs.ENV_VAR: repr(injected_fraction(
      trial.slowdown_pct))} if trial.slowdown_pct else {})
  sides = [runner.plan_runs(trial.configs, rounds, power_figures.BASELINE),
           runner.plan_runs(trial.configs, rounds, power_figures.CANDIDATE,
                            env=slowed)]
  return runner.interleave(sides)


def run_trial(trial, args, noise, log):
  """Runs one trial; returns its rows of the runs table and its failures."""
  # A folder of its own (a resumed trial starts again in a new one), so the
  # trial's records are its runs' only.
  os.makedirs(args.work_dir, exist_ok=True)
  folder = tempfile.mkdtemp(prefix=_safe(trial.trial_id) + '_',
                            dir=args.work_dir)
  environment = dict(os.environ)
  # Only the candidate side of a slowed trial may be slowed.
  environment.pop(injected_runs.ENV_VAR, None)
  started = time.monotonic()
  outcomes = runner.run_all(trial_runs(trial, args.rounds), folder,
                            python=sys.executable,
                            benchmark_script=args.benchmark_script,
                            timeout=args.timeout, stream=_Prefixed(log),
                            env=environment, noise=noise)
  seconds = time.monotonic() - started
  loaded = store.load_runs([folder])
  frame = loaded.reindex(columns=list(power_figures.RECORD_COLUMNS))
  by_path = {os.path.abspath(path): outcome for outcome in outcomes
             for path in outcome.record_paths}
  frame['run_seconds'] = [by_path[p].seconds for p in loaded['path']]
  frame['reruns'] = [by_path[p].reruns for p in loaded['path']]
  frame['trial'] = trial.trial_id
  frame['trial_set'] = trial.trial_set
  frame['slowdown_pct'] = trial.slowdown_pct
  frame['trial_seconds'] = seconds
  return frame, [o for o in outcomes if not o.ok]


class _Prefixed:
  """The runner's progress lines, indented under the trial's heading."""

  def __init__(self, log):
    self.log = log

  def write(self, text):
    if text.strip():
      self.log('  ' + text.rstrip('\n'))

  def flush(self):
    pass


def _safe(trial_id):
  return trial_id.replace('/', '_').replace(':', '-').replace(os.sep, '_')


def build_parser():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--quick', action='store_true',
                      help='a check of the machinery, not a measurement')
  parser.add_argument('--recompute', metavar='TABLE',
                      help='no runs: the figures from this table of runs')
  parser.add_argument('--models', help='comma-separated subset of %s (empty: '
                      'none, e.g. with --suite)' % ', '.join(MODELS))
  parser.add_argument('--rounds', type=int, help='paired rounds per trial')
  parser.add_argument('--aa_trials', type=int, help='A/A trials per model')
  parser.add_argument('--trials', type=int,
                      help='slowed trials per model and slowdown')
  parser.add_argument('--slowdowns', help='injected slowdowns in %%, e.g. '
                      '2,5,10')
  parser.add_argument('--suite', help='a suite file whose configurations '
                      'also run A/A as one family')
  parser.add_argument('--suite_trials', type=int,
                      help='A/A trials of the suite')
  parser.add_argument('--output', default=detection_power.DATA_PATH,
                      help='the figures (default %(default)s)')
  parser.add_argument('--runs', default=power_figures.RUNS_CSV,
                      help='the table of runs (default %(default)s)')
  parser.add_argument('--work_dir', help='where the records and logs go '
                      '(default: a new temporary folder, kept)')
  parser.add_argument('--resume', action='store_true',
                      help='keep --runs\' trials and run only the others')
  parser.add_argument('--timeout', type=float, default=900,
                      help='seconds one run may take')
  parser.add_argument('--benchmark_script',
                      default=runner.DEFAULT_BENCHMARK_SCRIPT,
                      help='entry script of the benchmark (tests: a fake)')
  suite.add_noise_options(parser)
  # The mode's own defaults fill what is not given.
  parser.set_defaults(target_seconds=None, max_reruns=None)
  return parser


def settings_of(args):
  settings = dict(QUICK if args.quick else FULL)
  for name in ('rounds', 'aa_trials', 'trials', 'target_seconds',
               'max_reruns', 'suite_trials'):
    if getattr(args, name) is not None:
      settings[name] = getattr(args, name)
  if args.models is not None:
    settings['models'] = [m for m in args.models.split(',') if m]
  if args.slowdowns:
    settings['slowdowns'] = [float(s) for s in args.slowdowns.split(',')]
  unknown = sorted(set(settings['models']) - set(MODELS))
  if unknown:
    raise UsageError('unknown model(s) %s; choose from %s.' % (
        ', '.join(unknown), ', '.join(MODELS)))
  if settings['rounds'] < 2:
    raise UsageError('--rounds %d: a trial needs at least 2 paired rounds '
                     '(and 6 for the paired test to reach p < 0.05).'
                     % settings['rounds'])
  if any(not 0 < s < 100 for s in settings['slowdowns']):
    raise UsageError('--slowdowns are percentages between 0 and 100.')
  if not settings['models'] and not args.suite:
    raise UsageError('nothing to measure: name --models or a --suite.')
  return settings


def write_figures(runs, runs_path, output):
  data = power_figures.figures(runs, runs_path)
  print(power_figures.report(data))
  detection_power.write(data, output)
  print('wrote %s (from %s)' % (os.path.abspath(output),
                                os.path.abspath(runs_path)))


def measure(args, settings, command, extra_flags):
  noise = suite.noise_control(args)
  model_configs = {
      name: suite_file.SuiteConfig(name, COMMON_FLAGS + MODELS[name]
                                   + extra_flags, settings['rounds'])
      for name in settings['models']}
  suite_set = None
  if args.suite:
    configs = suite_file.load_suite(args.suite)
    for config in configs:
      config.flag_args = config.flag_args + extra_flags
    suite_set = (power_figures.SUITE_PREFIX
                 + power_figures.shown_path(args.suite), configs)
  trials = plan_trials(model_configs, settings['aa_trials'],
                       settings['trials'], settings['slowdowns'], suite_set,
                       settings['suite_trials'])
  tables = []
  if args.resume and os.path.exists(args.runs):
    tables.append(power_figures.read_runs(args.runs))
  finished = set(tables[0]['trial']) if tables else set()
  args.work_dir = args.work_dir or tempfile.mkdtemp(prefix='detection_power_')
  to_run = [t for t in trials if t.trial_id not in finished]
  print('%d trial(s) of %d rounds, %d to run: %d benchmark runs and a '
        'calibration run per trial and configuration; records and logs: '
        '%s' % (len(trials), settings['rounds'], len(to_run),
                sum(2 * settings['rounds'] * len(t.configs) for t in to_run),
                args.work_dir), flush=True)
  failures = []
  for number, trial in enumerate(trials, 1):
    if trial.trial_id in finished:
      continue
    print('== trial %d/%d: %s, %s' % (
        number, len(trials), trial.trial_id,
        'A/A' if not trial.slowdown_pct else
        'candidate slowed by %g%%' % trial.slowdown_pct), flush=True)
    rows, failed = run_trial(trial, args, noise,
                             lambda line: print(line, flush=True))
    rows['study_mode'] = 'quick' if args.quick else 'full'
    rows['study_command'] = command
    tables.append(rows)
    failures += failed
    power_figures.write_runs(pd.concat(tables, ignore_index=True), args.runs)
  if failures:
    print('%d run(s) failed; logs under %s' % (len(failures), args.work_dir))
  write_figures(power_figures.read_runs(args.runs), args.runs, args.output)
  return 1 if failures else 0


def main(argv=None):
  argv = sys.argv[1:] if argv is None else list(argv)
  own_args, extra_flags = suite.split_benchmark_flags(argv)
  args = build_parser().parse_args(own_args)
  try:
    if args.recompute:
      if not os.path.exists(args.recompute):
        raise UsageError('no table of runs at %s.' % args.recompute)
      write_figures(power_figures.read_runs(args.recompute), args.recompute,
                    args.output)
      return 0
    settings = settings_of(args)
    args.target_seconds = settings['target_seconds']
    args.max_reruns = settings['max_reruns']
    suite.check_noise_options(args)
  except UsageError as error:
    return report_usage_error(error)
  command = ' '.join(['python studies/detection_power.py']
                     + [shlex.quote(a) for a in argv])
  try:
    return measure(args, settings, command, extra_flags)
  except KeyboardInterrupt:
    print('interrupted; the trials done so far are in %s (--resume goes on)'
          % args.runs)
    return 130


if __name__ == '__main__':
  sys.exit(main())
