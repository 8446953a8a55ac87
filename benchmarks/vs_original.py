#!/usr/bin/env python3
"""Ours vs the original tf_cnn_benchmarks: the same flags, run alternately.

  python benchmarks/vs_original.py --original_dir=DIR [--pairs=5]
      [--configs=trivial,resnet50,ps_sync,...] [--original_python=PYTHON]
      [--batch_size=8] [--num_batches=20] [--quick] [--data_dir=SHARDS]
      [--scaling] [--pairs_csv=CSV] [benchmark flags for both tools ...]

DIR is a clone of https://github.com/tensorflow/benchmarks; the original
runs from it as it is, under its own interpreter with tf-keras
(benchmarks/original_tool.py; PERFORMANCE.md says how to make it).

Each configuration starts with one untimed run of each side (the first
process after a pause reads cold caches: without it the side that ran
second won by ~12% in a pair, whichever it was), then is measured in pairs: a fresh process (or cluster) of
each tool, one right after the other, with the tool that goes first
alternating from pair to pair so a machine that slows down or speeds up
favours neither. A pair's ratio is ours/original of the `total images/sec`
both print; a configuration's result is the median of its pair ratios.
A cluster's rate is the mean of its workers' `total images/sec`, which in
both tools is a worker's estimate of the whole cluster's rate.

Configurations (--configs, comma-separated; default all):
  one process:  trivial (batch 32), resnet50, inception3, vgg16, alexnet,
                googlenet (batch --batch_size)
  loopback cluster, 1 ps + 2 workers, trivial at batch 32 per worker:
                ps_sync (parameter_server; ours in its default, true
                synchronous SGD), ps_sync_barrier (the same, ours with
                --sync_updates=barrier: the original's own semantics, so
                like is compared with like), ps_async (the same with
                --cross_replica_sync=False), dist_replicated
                (distributed_replicated); and resnet50 at --batch_size per
                worker: ps_sync_resnet50, ps_sync_barrier_resnet50. Ours
                through `tf_cnn_benchmarks launch`, the original's tasks
                started here.
  ours alone:   sync_cost, sync_cost_resnet50: true sync SGD
                (--sync_updates=mean) against the barrier on the same
                cluster (the price of the stronger guarantee);
                malloc_cost: ps_sync_barrier with glibc's malloc defaults
                (--tune_malloc=false) against ours as it is.
  real data:    real_trivial (batch 32), real_resnet50 (batch --batch_size),
                reading ImageNet-format TFRecords with --data_dir
                --data_name=imagenet: --data_dir, or shards built here by
                preprocessing/build_dataset.py from generated JPEGs.

--scaling instead prints cluster scaling: for trivial (batch 32 per worker)
and resnet50 (--batch_size per worker), 1 ps + 1, 2 and 4 workers against
one process with the same total batch, per tool (--scaling_tools), in
pairs like the comparison.

--pairs_csv=CSV appends every pair ratio of ours against the original
(with the commit measured, the date and the flags beyond the defaults) to
CSV; benchmarks/vs_original_pooled.py pools all the pairs of a
configuration at a commit, which is what PERFORMANCE.md quotes.

A run that fails on either side is reported (configuration, tool, command,
last lines of its output) and the comparison goes on; the exit code is 1
if any run failed. Like benchmarks/performance.py, each run starts only
once other processes leave the CPU mostly idle, and the `others` columns say
how much of it they took meanwhile.
"""

import argparse
import collections
import csv
import dataclasses
import datetime
import os
import shutil
import statistics
import sys
import tempfile

import original_tool
import vs_original_pooled
from subprocess_runs import HARNESS, RunFailed, Runner, share_text, total_rates
from tf_cnn_benchmarks.measure import versions  # pylint: disable=g-import-not-at-top

PAIRS = 5
QUICK_PAIRS = 1
TRIVIAL_BATCH = 32
MODELS = ('trivial', 'resnet50', 'inception3', 'vgg16', 'alexnet',
          'googlenet')
CLUSTER_WORKERS = 2
BARRIER = ('--sync_updates=barrier',)
# Two variants of ours side by side on one configuration (not against the
# original): name -> (the configuration, ((side, its own flags), ...)).
_SYNC_SIDES = (('mean', ('--sync_updates=mean',)), ('barrier', BARRIER))
OURS_ONLY_CONFIGS = {
    'sync_cost': ('ps_sync', _SYNC_SIDES),
    'sync_cost_resnet50': ('ps_sync_resnet50', _SYNC_SIDES),
    'malloc_cost': ('ps_sync_barrier', (('untuned', ('--tune_malloc=false',)),
                                        ('tuned', ()))),
}
SCALING_MODELS = ('trivial', 'resnet50')
SCALING_WORKERS = (1, 2, 4)
# Flags both tools need on a CPU-only machine: the original defaults to the
# GPU, NCHW (which its CPU kernels lack for pooling) and variables on /gpu.
CPU_FLAGS = ('--device=cpu', '--data_format=NHWC',
             '--local_parameter_device=cpu', '--display_every=1000')


@dataclasses.dataclass(frozen=True)
class Config:
  name: str
  flags: tuple  # the benchmark flags, the same for both tools
  workers: int = 0  # 0: one process; N: a loopback cluster, 1 ps + N workers
  real_data: bool = False
  # Flags only our harness gets (e.g. --sync_updates): the original has no
  # such flag, and this is how the two are made to mean the same thing.
  ours_flags: tuple = ()
  # ((side, flags of that side), ...): two variants of ours on the same
  # configuration, and the original takes no part (OURS_ONLY_CONFIGS).
  ours_sides: tuple = ()

  def describe(self):
    where = ('one process' if not self.workers else
             'loopback cluster, 1 ps + %d worker%s' % (
                 self.workers, 's' if self.workers > 1 else ''))
    ours = ' (ours also %s)' % ' '.join(self.ours_flags) if self.ours_flags \
        else ''
    return '%s (%s): %s%s' % (self.name, where, ' '.join(self.flags), ours)


def _batch(model, args):
  return TRIVIAL_BATCH if model == 'trivial' else args.batch_size


def _num_batches(model, args):
  # trivial's step is a few ms: 20 of them time scheduler noise, not a step.
  return args.trivial_num_batches if model == 'trivial' else args.num_batches


def _run_flags(model, batch_size, args, extra):
  return (('--model=%s' % model, '--batch_size=%d' % batch_size,
           '--num_batches=%d' % _num_batches(model, args),
           '--num_warmup_batches=%d' % args.num_warmup_batches) + CPU_FLAGS +
          tuple(extra))


def all_configs(args, extra):
  """{name: Config}, in the order they run."""
  configs = [Config(m, _run_flags(m, _batch(m, args), args, extra))
             for m in MODELS]
  cluster = _run_flags('trivial', TRIVIAL_BATCH, args, extra)
  ps = ('--variable_update=parameter_server',)
  for name, mode, ours in (
      ('ps_sync', ps, ()),
      ('ps_sync_barrier', ps, BARRIER),
      ('ps_async', ps + ('--cross_replica_sync=False',), ()),
      ('dist_replicated', ('--variable_update=distributed_replicated',), ())):
    configs.append(Config(name, cluster + mode, workers=CLUSTER_WORKERS,
                          ours_flags=ours))
  big = _run_flags('resnet50', _batch('resnet50', args), args, extra) + ps
  for name, ours in (('ps_sync_resnet50', ()),
                     ('ps_sync_barrier_resnet50', BARRIER)):
    configs.append(Config(name, big, workers=CLUSTER_WORKERS, ours_flags=ours))
  for name, (of, sides) in OURS_ONLY_CONFIGS.items():
    configs.append(dataclasses.replace(
        next(c for c in configs if c.name == of), name=name,
        ours_sides=sides))
  for model in ('trivial', 'resnet50'):
    configs.append(Config(
        'real_' + model, _run_flags(model, _batch(model, args), args, extra) +
        ('--data_name=imagenet',), real_data=True))
  return collections.OrderedDict((c.name, c) for c in configs)


def select(configs, spec):
  """The configurations named in ``spec`` (comma-separated; empty: all)."""
  if not spec:
    return list(configs.values())
  names = [n.strip() for n in spec.split(',') if n.strip()]
  unknown = [n for n in names if n not in configs]
  if unknown:
    raise UsageError('Unknown configuration %s in --configs. Choose from: '
                     '%s.' % (', '.join(unknown), ', '.join(configs)))
  return [configs[n] for n in names]


class UsageError(Exception):
  pass


# --- one run of one side, and pairs of them -------------------------------


@dataclasses.dataclass
class Run:
  side: str
  rate: float = None
  share: float = None
  error: str = None


def rate_of(stdout, workers):
  """A run's images/sec from what it printed: its `total images/sec`, or
  for a cluster the mean over its workers; RunFailed if any is missing."""
  rates = total_rates(stdout)
  labels = ['worker%d' % i for i in range(workers)] if workers else ['']
  missing = [l or 'the process' for l in labels if l not in rates]
  if missing:
    raise RunFailed('no "total images/sec" line from %s in the output:\n%s'
                    % (', '.join(missing), stdout[-2000:]))
  return statistics.mean(rates[l] for l in labels)


def measure(side, call, workers):
  """Run(side, rate, share), or Run(side, error=...) if it failed."""
  try:
    stdout, share = call()
    return Run(side, rate_of(stdout, workers), share)
  except RunFailed as e:
    return Run(side, error=str(e))


def pair_order(index, sides):
  """The sides in the order pair ``index`` runs them: alternating."""
  return tuple(sides) if index % 2 == 0 else tuple(reversed(sides))


def summarize(pairs, sides):
  """Medians over pairs of {side: Run}: the rate of each side, and of the
  ratio sides[0]/sides[1] over the pairs where both sides succeeded."""
  a, b = sides
  ratios = [p[a].rate / p[b].rate for p in pairs
            if p[a].rate is not None and p[b].rate]
  summary = {'pairs': len(pairs), 'good_pairs': len(ratios),
             'ratio': statistics.median(ratios) if ratios else None}
  for side in sides:
    rates = [p[side].rate for p in pairs if p[side].rate is not None]
    summary[side] = statistics.median(rates) if rates else None
    summary[side + '_failed'] = sum(p[side].error is not None for p in pairs)
  return summary


def failure_text(error, head=2, tail=20):
  """A failed run's error: its first lines (the command, the exit code or
  the failing task) and the last lines of its output, where the cause is."""
  lines = error.rstrip().splitlines()
  if len(lines) <= head + tail:
    return '\n'.join(lines)
  return '\n'.join(lines[:head] + ['[... %d lines ...]' % (
      len(lines) - head - tail)] + lines[-tail:])


def _rate_text(run):
  return '%12.2f' % run.rate if run.rate is not None else '%12s' % 'FAILED'


class Comparison:
  """Pairs of runs of two sides, printed as they come, failures kept."""

  def __init__(self, out):
    self.out = out
    self.failures = []  # (label, side, pair number, error text)
    self.results = []  # (label, sides, summary)
    self.pairs = {}  # label -> [{side: Run}, ...], every pair as it ran

  def run(self, label, sides, calls, workers, num_pairs, warmup_runs=0):
    """``calls``: {side: () -> (stdout, share)}; ``workers`` says how to
    read each side's rate ({side: 0 or the number of workers}).
    ``warmup_runs`` untimed runs of each side come first."""
    a, b = sides
    for _ in range(warmup_runs):
      for side in sides:
        # Its failure would show in the pairs too: only its time is wasted.
        measure(side, calls[side], workers[side])
    self.out('%4s  %-11s %12s %12s %10s  others %s' % (
        'pair', 'first', a[:12], b[:12], 'ratio', '%s / %s' % (a, b)))
    pairs = []
    for index in range(num_pairs):
      runs = {}
      for side in pair_order(index, sides):
        runs[side] = measure(side, calls[side], workers[side])
        if runs[side].error:
          self.failures.append((label, side, index + 1, runs[side].error))
      pairs.append(runs)
      ratio = ('%9.3fx' % (runs[a].rate / runs[b].rate)
               if runs[a].rate is not None and runs[b].rate else
               '%10s' % 'n/a')
      self.out('%4d  %-11s %s %s %s  %s / %s' % (
          index + 1, pair_order(index, sides)[0], _rate_text(runs[a]),
          _rate_text(runs[b]), ratio, share_text(runs[a].share).strip(),
          share_text(runs[b].share).strip()))
    summary = summarize(pairs, sides)
    self.pairs[label] = pairs
    self.results.append((label, sides, summary))
    self.out(summary_line(label, sides, summary))
    return summary

  def report_failures(self):
    if not self.failures:
      return
    self.out('\n== failed runs (%d)' % len(self.failures))
    for label, side, number, error in self.failures:
      self.out('-- %s, %s, pair %d:' % (label, side, number))
      self.out('   ' + failure_text(error).replace('\n', '\n   '))


def summary_line(label, sides, summary):
  a, b = sides
  failed = ', '.join('%s failed %d of %d' % (s, summary[s + '_failed'],
                                            summary['pairs'])
                     for s in sides if summary[s + '_failed'])
  if summary['ratio'] is None:
    return '%s: %s/%s n/a: no pair where both ran (%s)' % (
        label, a, b, failed)
  return ('%s: %s/%s = %.3fx (median of %d pair ratios); images/sec medians: '
          '%s %.2f, %s %.2f%s' % (
              label, a, b, summary['ratio'], summary['good_pairs'], a,
              summary[a], b, summary[b], '; ' + failed if failed else ''))


# --- the two tools ---------------------------------------------------------


def ours_call(runner, flags, workers, timeout):
  """() -> (stdout, share) of our harness: one process, or `launch`."""
  records = ['--result_dir=%s' % runner.result_dir]
  if workers:
    cmd = [sys.executable, HARNESS, 'launch', '--ps', '1',
           '--workers', str(workers), '--timeout=%d' % timeout, '--']
  else:
    cmd = [sys.executable, HARNESS]
  return lambda: runner.run(cmd + list(flags) + records)


def original_call(original, flags, workers):
  if workers:
    return lambda: original.run_cluster(flags, 1, workers)
  return lambda: original.run(flags)


def tool_call(tool, config, runner, original, timeout):
  """() -> (stdout, share) of ``config`` run by ``tool``."""
  if tool == 'ours':
    return ours_call(runner, config.flags + config.ours_flags,
                     config.workers, timeout)
  return original_call(original, config.flags, config.workers)


def sides_and_calls(config, runner, original, timeout):
  """(the two sides, {side: call}) that ``config`` compares."""
  if config.ours_sides:
    return tuple(side for side, _ in config.ours_sides), {
        side: ours_call(runner, config.flags + config.ours_flags + flags,
                        config.workers, timeout)
        for side, flags in config.ours_sides}
  sides = ('ours', 'original')
  return sides, {tool: tool_call(tool, config, runner, original, timeout)
                 for tool in sides}


def make_shards(work, quick, log):
  """ImageNet-format shards of generated JPEGs, by our own builder."""
  # TensorFlow loads only here, and only when a real-data run needs it.
  from preprocessing import build_dataset  # pylint: disable=g-import-not-at-top
  from preprocessing import generated_data  # pylint: disable=g-import-not-at-top
  images, shards = os.path.join(work, 'images'), os.path.join(work, 'shards')
  height, width = (48, 64) if quick else (375, 500)
  generated_data.make_image_folder(images, num_classes=4,
                                   images_per_class=8 if quick else 64,
                                   height=height, width=width)
  build_dataset.build(images, shards, num_train_shards=4,
                      num_validation_shards=1, validation_fraction=0.1,
                      log=lambda *a: None)
  log('real data: generated ImageNet shards in %s' % shards)
  return shards


# --- the two modes ---------------------------------------------------------


def compare_tools(comparison, configs, runner, original, args, data_dir):
  for config in configs:
    if config.real_data:
      config = dataclasses.replace(
          config, flags=config.flags + ('--data_dir=%s' % data_dir,))
    comparison.out('\n== %s' % config.describe())
    sides, calls = sides_and_calls(config, runner, original, args.run_timeout)
    comparison.run(config.name, sides, calls,
                   {s: config.workers for s in sides}, args.pairs,
                   args.warmup_runs)


def scaling_configs(args, extra):
  """[(cluster Config, one-process Config)]: N workers at batch B, and one
  process at batch N x B (so both train on the same images per step)."""
  pairs = []
  for model in args.scaling_models.split(','):
    batch = _batch(model, args)
    for workers in [int(w) for w in args.scaling_workers.split(',')]:
      pairs.append((
          Config('%s_x%d' % (model, workers),
                 _run_flags(model, batch, args, extra) +
                 ('--variable_update=parameter_server',), workers=workers),
          Config('%s_batch%d' % (model, batch * workers),
                 _run_flags(model, batch * workers, args, extra))))
  return pairs


def scaling(comparison, runner, original, args, extra):
  """Cluster of N workers vs one process with N times the batch, per tool."""
  sides = ('cluster', 'one_process')
  for cluster, single in scaling_configs(args, extra):
    for tool in args.scaling_tools.split(','):
      comparison.out('\n== %s %s vs %s' % (tool, cluster.describe(),
                                            single.describe()))
      comparison.run(
          '%s %s' % (tool, cluster.name), sides,
          {'cluster': tool_call(tool, cluster, runner, original,
                                args.run_timeout),
           'one_process': tool_call(tool, single, runner, original,
                                    args.run_timeout)},
          {'cluster': cluster.workers, 'one_process': 0}, args.pairs,
          args.warmup_runs)


def print_table(comparison):
  out = comparison.out
  out('\n== summary: medians over pairs (images/sec; ratio = median of the '
      'pair ratios)')
  out('%-24s %6s %12s %12s %10s' % ('configuration', 'pairs', 'first side',
                                    'second side', 'ratio'))
  for label, sides, s in comparison.results:
    rates = ['%12.2f' % s[side] if s[side] is not None else '%12s' % 'n/a'
             for side in sides]
    out('%-24s %3d/%-2d %s %s %10s  (%s/%s)' % (
        label, s['good_pairs'], s['pairs'], rates[0], rates[1],
        '%.3fx' % s['ratio'] if s['ratio'] is not None else 'n/a',
        sides[0], sides[1]))


def pair_rows(comparison, harness, date, run, variant):
  """Rows of vs_original_pooled.py's CSV: one per pair of ours against the
  original where both ran (ours-against-ours configurations are not
  side-by-side measurements and stay out)."""
  rows = []
  for label, sides, _ in comparison.results:
    if sides != ('ours', 'original'):
      continue
    number = 0
    for pair in comparison.pairs[label]:
      if pair['ours'].rate is None or not pair['original'].rate:
        continue
      number += 1
      shares = [pair[s].share for s in sides]
      note = ('others %s%%' % ' / '.join(
          '%.0f' % (100 * x) if x is not None else '?' for x in shares))
      rows.append({'harness': harness, 'date': date, 'configuration': label,
                   'variant': variant, 'run': run, 'pair': number,
                   'ratio': '%.4f' % (pair['ours'].rate /
                                      pair['original'].rate),
                   'note': note})
  return rows


def append_pairs(path, rows):
  """Appends ``rows`` to the CSV at ``path``, its header first if new."""
  fresh = not os.path.exists(path) or os.path.getsize(path) == 0
  with open(path, 'a', newline='') as f:
    writer = csv.DictWriter(f, fieldnames=vs_original_pooled.COLUMNS,
                            lineterminator='\n')
    if fresh:
      writer.writeheader()
    writer.writerows(rows)


def variant_of(args, extra):
  """The flags of this invocation beyond the configurations' defaults."""
  defaults, _ = parse_args([])
  flags = list(extra)
  for name in ('batch_size', 'num_batches', 'num_warmup_batches',
               'trivial_num_batches'):
    if getattr(args, name) != getattr(defaults, name):
      flags.append('--%s=%s' % (name, getattr(args, name)))
  return ' '.join(flags)


# --- command line ----------------------------------------------------------


def parse_args(argv):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument('--original_dir', default=original_tool.default_dir(),
                 help='clone of tensorflow/benchmarks (default: $%s)' %
                 original_tool.DIR_ENV)
  p.add_argument('--original_python', default=original_tool.default_python(),
                 help='interpreter with tensorflow and tf-keras for the '
                      'original (default: $%s, else %s)' % (
                          original_tool.PYTHON_ENV,
                          original_tool.DEFAULT_PYTHON))
  p.add_argument('--pairs', type=int, default=None,
                 help='pairs per configuration (default %d; %d with --quick)'
                 % (PAIRS, QUICK_PAIRS))
  p.add_argument('--configs', default='',
                 help='comma-separated configurations (default: all)')
  p.add_argument('--batch_size', type=int, default=8,
                 help='batch per device of every model but trivial (32)')
  p.add_argument('--num_batches', type=int, default=20)
  p.add_argument('--num_warmup_batches', type=int, default=3)
  p.add_argument('--trivial_num_batches', type=int, default=300,
                 help='timed steps of trivial (a step of a few ms)')
  p.add_argument('--warmup_runs', type=int, default=None,
                 help='untimed runs of each side before a configuration\'s '
                      'pairs (default 1; 0 with --quick)')
  p.add_argument('--data_dir', default=None,
                 help='ImageNet TFRecords for the real-data configurations '
                      '(default: generated here)')
  p.add_argument('--scaling', action='store_true',
                 help='print the cluster scaling table instead')
  p.add_argument('--scaling_models', default=','.join(SCALING_MODELS))
  p.add_argument('--scaling_workers',
                 default=','.join(str(w) for w in SCALING_WORKERS))
  p.add_argument('--scaling_tools', default='ours,original')
  p.add_argument('--max_other_share', type=float, default=0.25,
                 help='start a run only when other processes use at most '
                      'this share of the CPU (negative: never wait)')
  p.add_argument('--run_timeout', type=float, default=1800,
                 help='seconds one run (process or cluster) may take')
  p.add_argument('--result_dir', default=None,
                 help='where our runs leave their records')
  p.add_argument('--pairs_csv', default=None,
                 help='append every pair ratio to this CSV (PERFORMANCE.md '
                      'pools benchmarks/data/vs_original_pairs.csv with '
                      'benchmarks/vs_original_pooled.py)')
  p.add_argument('--quick', action='store_true',
                 help='test size: 3 timed steps after 1 warm-up, one pair, '
                      'small generated images')
  args, extra = p.parse_known_args(argv)
  if args.quick:
    args.num_batches, args.num_warmup_batches = 3, 1
    args.trivial_num_batches = 3
  if args.warmup_runs is None:
    args.warmup_runs = 0 if args.quick else 1
  if args.pairs is None:
    args.pairs = QUICK_PAIRS if args.quick else PAIRS
  if args.pairs < 1:
    raise UsageError('--pairs must be at least 1 (got %d).' % args.pairs)
  return args, extra


def check_scaling_args(args):
  tools = args.scaling_tools.split(',')
  bad = [t for t in tools if t not in ('ours', 'original')]
  if bad:
    raise UsageError('Unknown tool %s in --scaling_tools; use ours, '
                     'original or both.' % ', '.join(bad))
  try:
    workers = [int(w) for w in args.scaling_workers.split(',')]
  except ValueError:
    workers = [0]
  if min(workers) < 1:
    raise UsageError('--scaling_workers takes worker counts of at least 1, '
                     'comma-separated (got %r).' % args.scaling_workers)
  bad = [m for m in args.scaling_models.split(',') if m not in MODELS]
  if bad:
    raise UsageError('Unknown model %s in --scaling_models; choose from %s.'
                     % (', '.join(bad), ', '.join(MODELS)))
  return 'original' in tools


def main(argv):
  try:
    args, extra = parse_args(argv)
    if args.scaling:
      needs_original, configs = check_scaling_args(args), []
    else:
      configs = select(all_configs(args, extra), args.configs)
      needs_original = not all(c.ours_sides for c in configs)
  except UsageError as e:
    print('vs_original.py: %s' % e, file=sys.stderr)
    return 2
  out = lambda text='': print(text, flush=True)
  log = lambda m: print('  .. ' + m, file=sys.stderr, flush=True)
  if needs_original:
    why = original_tool.problem(args.original_dir, args.original_python)
    if why:
      print('vs_original.py: %s' % why, file=sys.stderr)
      return 2
  runner = Runner(
      max_other_share=None if args.max_other_share < 0 else
      args.max_other_share, result_dir=args.result_dir, log=log,
      attempts=1, timeout=args.run_timeout)
  original = (original_tool.Original(args.original_dir, args.original_python,
                                     runner, timeout=args.run_timeout)
              if needs_original else None)
  out('benchmarks/vs_original.py %s' % ' '.join(argv))
  out('original: %s under %s' % (args.original_dir, args.original_python)
      if original else 'original: not needed')
  out('our records: %s' % runner.result_dir)
  comparison = Comparison(out)
  work = None
  try:
    data_dir = args.data_dir
    if any(c.real_data for c in configs) and not data_dir:
      work = tempfile.mkdtemp(prefix='vs_original_data_')
      data_dir = make_shards(work, args.quick, log)
    if args.scaling:
      scaling(comparison, runner, original, args, extra)
    else:
      compare_tools(comparison, configs, runner, original, args, data_dir)
  finally:
    if work:
      shutil.rmtree(work, ignore_errors=True)
  print_table(comparison)
  if args.pairs_csv and not args.scaling:
    rows = pair_rows(comparison, versions.harness_version(),
                     datetime.date.today().isoformat(),
                     datetime.datetime.now().strftime('%Y%m%dT%H%M%S'),
                     variant_of(args, extra))
    append_pairs(args.pairs_csv, rows)
    out('%d pair ratios appended to %s' % (len(rows), args.pairs_csv))
  comparison.report_failures()
  return 1 if comparison.failures else 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
