#!/usr/bin/env python3
"""How often does `compare` catch a real slowdown, and how often does it cry
wolf? Measured on real runs of this machine.

  python studies/detection_power.py [--quick] [--models trivial,lenet]
      [--rounds 20] [--trials 2000] [--output results/detection_power.json]
      [--work_dir DIR] [--timeout 900]

For each model it runs, in rounds, one process of each condition in a
shuffled order (so drift of the machine hits every condition alike):

  A1, A2          the same real configuration twice (A/A);
  slow2/5/10      the same, slowed by 2, 5 and 10% with the test-only
                  injected slowdown (tf_cnn_benchmarks/test_hooks/
                  injected_slowdown.py: idle time after each timed step,
                  inside the timed clock).

A slowdown of s% means throughput x (1 - s/100): each step idles for
s/(100 - s) of its own time. The pools' measured ratio is printed too (the
harness's few microseconds between steps are not slowed, so it is a little
under s).

Then, for n = 3, 5, 10 runs a side, it draws `--trials` comparisons of n
runs against n from those pools (distinct runs within a trial) and judges
each exactly as `compare` does (results/stats.py, default alpha and
threshold):

  false-alarm rate   A1 vs A2: any verdict other than `no change` or
                     `inconclusive` (a regression or an improvement);
  detection rate     A1 vs slowS: `regression`;
  smallest n         the smallest n catching 5% in >= 95% of trials with
                     <= 5% false alarms.

Trials drawn from pools of `--rounds` runs overlap, so their spread
understates the uncertainty of a rate; the runs behind it are counted in the
output. The figures go to --output (default results/detection_power.json,
which `compare` reads); every record stays in --work_dir for `compare` and
the dashboard.

--quick (trivial only, n = 3, 10% slowdown, 3 rounds: 9 short runs) checks
that the machinery works in under a minute; its figures say they come from a
quick run and are not a measurement to quote.
"""

import argparse
import datetime
import os
import shlex
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

# pylint: disable=g-import-not-at-top
from results import detection_power
from results import runner
from results import stats
from tf_cnn_benchmarks.test_hooks import injected_slowdown
from tf_cnn_benchmarks.measure import environment
from tf_cnn_benchmarks.measure import versions

COMMON_FLAGS = ['--device=cpu']
# The ImageNet-size model runs at a small batch so a run stays ~half a minute.
MODELS = {
    'trivial': ['--model=trivial', '--batch_size=32', '--num_batches=50',
                '--num_warmup_batches=5'],
    'lenet': ['--model=lenet', '--batch_size=32', '--num_batches=50',
              '--num_warmup_batches=5'],
    'resnet20': ['--model=resnet20', '--data_name=cifar10', '--batch_size=32',
                 '--num_batches=30', '--num_warmup_batches=5'],
    'resnet50': ['--model=resnet50', '--batch_size=4', '--num_batches=20',
                 '--num_warmup_batches=3'],
}
FULL = dict(models=list(MODELS), ns=[3, 5, 10], slowdowns=[2, 5, 10],
            rounds=20, trials=2000)
QUICK = dict(models=['trivial'], ns=[3], slowdowns=[10], rounds=3,
             trials=200)
QUICK_FLAGS = {'trivial': ['--model=trivial', '--batch_size=32',
                           '--num_batches=10', '--num_warmup_batches=1']}
BASELINES = ('A1', 'A2')


def slowdown_condition(pct):
  return 'slow%g' % pct


def injected_fraction(pct):
  """Idle fraction of each step that lowers throughput by pct%."""
  return pct / (100.0 - pct)


def plan(models, slowdowns, rounds, seed):
  """[(model, condition, round)] in rounds, conditions shuffled per round."""
  rng = np.random.default_rng(seed)
  conditions = list(BASELINES) + [slowdown_condition(p) for p in slowdowns]
  planned = []
  for model in models:
    for index in range(1, rounds + 1):
      for position in rng.permutation(len(conditions)):
        planned.append((model, conditions[position], index))
  return planned


def run_all(planned, flags_by_model, slowdowns, rounds, work_dir, timeout,
            log=print):
  """Runs every planned process; returns {model: {condition: [img/s]}}."""
  fractions = {slowdown_condition(p): injected_fraction(p) for p in slowdowns}
  pools, failures = {}, []
  base_env = dict(os.environ)
  base_env.pop(injected_slowdown.ENV_VAR, None)
  for position, (model, condition, index) in enumerate(planned, 1):
    env = dict(base_env)
    if condition in fractions:
      env[injected_slowdown.ENV_VAR] = repr(fractions[condition])
    run = runner.PlannedRun(model, COMMON_FLAGS + flags_by_model[model],
                            '%s-%s' % (model, condition), index, rounds)
    outcome = runner.execute(run, sys.executable,
                             runner.DEFAULT_BENCHMARK_SCRIPT, work_dir,
                             timeout, env)
    log(runner.progress_line(position, len(planned), outcome))
    if outcome.ok and outcome.images_per_sec:
      pools.setdefault(model, {}).setdefault(condition, []).append(
          outcome.images_per_sec)
    else:
      failures.append(outcome)
  return pools, failures


def _verdicts(pool_a, pool_b, n, trials, rng, same_pool):
  """Verdicts of `trials` comparisons of n runs of pool_a against n of
  pool_b (disjoint draws when both are the same pool)."""
  a, b = np.asarray(pool_a), np.asarray(pool_b)
  out = []
  for _ in range(trials):
    if same_pool:
      picked = rng.choice(len(a), 2 * n, replace=False)
      first, second = a[picked[:n]], a[picked[n:]]
    else:
      first = a[rng.choice(len(a), n, replace=False)]
      second = b[rng.choice(len(b), n, replace=False)]
    out.append(stats.compare_throughput(first, second).verdict)
  return out


def rates(pools, ns, slowdowns, trials, seed):
  """The figures of one model from its pools of throughputs."""
  rng = np.random.default_rng(seed)
  a1, a2 = pools.get('A1', []), pools.get('A2', [])
  figures = {'false_alarm_rate': {}, 'inconclusive_rate': {},
             'detection_rate': {}, 'measured_slowdown_pct': {},
             'runs': {name: len(values) for name, values in pools.items()}}
  baseline = a1 + a2
  for n in ns:
    if min(len(a1), len(a2)) >= n:
      verdicts = _verdicts(a1, a2, n, trials, rng, same_pool=False)
    elif len(baseline) >= 2 * n:
      verdicts = _verdicts(baseline, baseline, n, trials, rng, same_pool=True)
    else:
      continue
    figures['false_alarm_rate'][str(n)] = _share(
        verdicts, (stats.REGRESSION, stats.IMPROVEMENT))
    figures['inconclusive_rate'][str(n)] = _share(verdicts,
                                                  (stats.INCONCLUSIVE,))
  for pct in slowdowns:
    slowed = pools.get(slowdown_condition(pct), [])
    by_n = {}
    for n in ns:
      if len(a1) >= n and len(slowed) >= n:
        by_n[str(n)] = _share(_verdicts(a1, slowed, n, trials, rng, False),
                              (stats.REGRESSION,))
    figures['detection_rate']['%g' % pct] = by_n
    if slowed and baseline:
      figures['measured_slowdown_pct']['%g' % pct] = round(
          100.0 * (1.0 - np.median(slowed) / np.median(baseline)), 2)
  answers = [n for n in ns if (detection_power.smallest_detectable_pct(
      figures, n) or np.inf) <= detection_power.TARGET_SLOWDOWN_PCT]
  figures['smallest_n_for_5pct'] = min(answers) if answers else None
  return figures


def _share(verdicts, wanted):
  return round(sum(v in wanted for v in verdicts) / len(verdicts), 4)


def table(figures_by_model, ns, slowdowns):
  """The printed summary, one block per model."""
  lines = []
  for model, figures in figures_by_model.items():
    lines.append('%s (runs per condition: %s)' % (model, ', '.join(
        '%s %d' % kv for kv in sorted(figures['runs'].items()))))
    lines.append('  %-26s' % 'n runs a side' + ''.join(
        '%8d' % n for n in ns))
    lines.append('  %-26s' % 'false alarms (A/A)' + ''.join(
        '%8s' % _pct(figures['false_alarm_rate'].get(str(n))) for n in ns))
    for pct in slowdowns:
      measured = figures['measured_slowdown_pct'].get('%g' % pct)
      name = 'caught %g%% (%s)' % (pct, 'n/a' if measured is None
                                   else 'meas. %.1f%%' % measured)
      lines.append('  %-26s' % name + ''.join(
          '%8s' % _pct(figures['detection_rate']['%g' % pct].get(str(n)))
          for n in ns))
    smallest = figures['smallest_n_for_5pct']
    lines.append('  smallest n catching 5%% at >= 95%% with <= 5%% false '
                 'alarms: %s' % (smallest if smallest else 'none measured'))
  return '\n'.join(lines)


def _pct(rate):
  return 'n/a' if rate is None else '%.0f%%' % (100 * rate)


def build_parser():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--quick', action='store_true',
                      help='a one-minute check of the machinery, not a '
                      'measurement')
  parser.add_argument('--models', help='comma-separated subset of %s'
                      % ', '.join(MODELS))
  parser.add_argument('--rounds', type=int, help='runs per condition')
  parser.add_argument('--trials', type=int,
                      help='comparisons drawn per n and condition')
  parser.add_argument('--output', default=detection_power.DATA_PATH,
                      help='the figures (JSON) compare reads (default '
                      '%(default)s)')
  parser.add_argument('--work_dir', help='where the run records and logs '
                      'go (default: a new temporary folder, kept)')
  parser.add_argument('--timeout', type=float, default=900,
                      help='seconds one run may take')
  parser.add_argument('--seed', type=int, default=0)
  return parser


def main(argv=None):
  args = build_parser().parse_args(argv)
  settings = dict(QUICK if args.quick else FULL)
  flags_by_model = dict(MODELS, **(QUICK_FLAGS if args.quick else {}))
  if args.models:
    settings['models'] = args.models.split(',')
  unknown = [m for m in settings['models'] if m not in flags_by_model]
  if unknown:
    sys.stderr.write('error: unknown model(s) %s; choose from %s.\n' % (
        ', '.join(unknown), ', '.join(MODELS)))
    return 2
  settings['rounds'] = args.rounds or settings['rounds']
  settings['trials'] = args.trials or settings['trials']
  if settings['rounds'] < min(settings['ns']):
    sys.stderr.write('error: --rounds %d is fewer than the smallest n (%d); '
                     'each side of a comparison needs n runs.\n'
                     % (settings['rounds'], min(settings['ns'])))
    return 2
  work_dir = args.work_dir or tempfile.mkdtemp(prefix='detection_power_')
  print('records and logs: %s' % work_dir, flush=True)
  planned = plan(settings['models'], settings['slowdowns'],
                 settings['rounds'], args.seed)
  pools, failures = run_all(planned, flags_by_model, settings['slowdowns'],
                            settings['rounds'], work_dir, args.timeout,
                            log=lambda line: print(line, flush=True))
  figures = {model: dict(rates(pools.get(model, {}), settings['ns'],
                               settings['slowdowns'], settings['trials'],
                               args.seed),
                         flags=COMMON_FLAGS + flags_by_model[model])
             for model in settings['models']}
  print(table(figures, settings['ns'], settings['slowdowns']))
  if failures:
    print('%d run(s) failed and are left out; logs under %s'
          % (len(failures), work_dir))
  given = sys.argv[1:] if argv is None else argv
  command = ' '.join(['python studies/detection_power.py']
                     + [shlex.quote(a) for a in given])
  detection_power.write({
      'source': {
          'command': command,
          'mode': 'quick' if args.quick else 'full',
          'date': datetime.datetime.now(datetime.timezone.utc).strftime(
              '%Y-%m-%d %H:%M UTC'),
          'cpu_model': environment.describe(with_tensorflow=False).get(
              'cpu_model'),
          'harness_version': versions.harness_version(),
          'note': ('a --quick check of the machinery (trivial, 3 rounds): '
                   'not a measurement to quote' if args.quick else
                   'interleaved real runs; trials drawn from the pools'),
          'failed_runs': len(failures)},
      'settings': {
          'alpha': stats.DEFAULT_ALPHA,
          'min_effect_pct': stats.DEFAULT_MIN_EFFECT_PCT,
          'ns': settings['ns'], 'slowdowns_pct': settings['slowdowns'],
          'trials': settings['trials'], 'runs_per_condition':
          settings['rounds'], 'detect_at': detection_power.DETECT_AT,
          'max_false_alarms': detection_power.MAX_FALSE_ALARMS},
      'models': figures,
  }, args.output)
  print('wrote %s' % os.path.abspath(args.output))
  return 1 if failures else 0


if __name__ == '__main__':
  sys.exit(main())
