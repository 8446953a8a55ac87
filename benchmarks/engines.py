#!/usr/bin/env python3
"""The graph engine and the tf2 engine on the same models, side by side.

  python benchmarks/engines.py [--models=resnet50,inception3,vgg16]
      [--dtypes=float32,bfloat16] [--variants=graph,tf2,tf2_jit]
      [--batch_size=16] [--num_batches=6] [--num_warmup_batches=2]
      [--repeats=1] [--max_other_share=0.25]

Every model x dtype runs each variant as a fresh process (subprocess_runs:
started once the machine is quiet, with the CPU share others took), the
variants taking turns within each round so a drift of the machine hits all
of them alike. The table gives each variant's median images/sec (of its
median step) and its ratio to the graph engine of the same script run:

  graph     --engine=graph (tf.compat.v1 session; the default)
  tf2       --engine=tf2 (tf.function step, default strategy on one device)
  tf2_jit   --engine=tf2 --xla_compile (the step with jit_compile=True)
"""

import argparse
import statistics
import sys

from subprocess_runs import Runner, median_rate, model_flags, share_text

VARIANTS = {
    'graph': ['--engine=graph'],
    'tf2': ['--engine=tf2'],
    'tf2_jit': ['--engine=tf2', '--xla_compile'],
}
DTYPES = {'float32': [], 'bfloat16': ['--use_fp16']}
BASELINE = 'graph'


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--models', default='resnet50,inception3,vgg16')
  parser.add_argument('--dtypes', default='float32,bfloat16')
  parser.add_argument('--variants', default=','.join(VARIANTS))
  parser.add_argument('--batch_size', type=int, default=16)
  parser.add_argument('--num_batches', type=int, default=6)
  parser.add_argument('--num_warmup_batches', type=int, default=2)
  parser.add_argument('--repeats', type=int, default=1)
  parser.add_argument('--max_other_share', type=float, default=0.25,
                      help='wait until other processes use less of the CPU '
                      '(negative: do not wait)')
  parser.add_argument('--result_dir', default=None)
  args = parser.parse_args(argv)
  for name in args.variants.split(','):
    if name not in VARIANTS:
      parser.error('unknown variant %r; known: %s' % (name,
                                                      ', '.join(VARIANTS)))
  for name in args.dtypes.split(','):
    if name not in DTYPES:
      parser.error('unknown dtype %r; known: %s' % (name, ', '.join(DTYPES)))
  return args


def measure(runner, args, model, dtype, variants):
  """{variant: [(images/sec, others' CPU share)]}, variants alternating."""
  rates = {v: [] for v in variants}
  flags = model_flags(model, args.batch_size, args.num_batches,
                      args.num_warmup_batches) + DTYPES[dtype]
  for _ in range(args.repeats):
    for variant in variants:
      rec = runner.harness(flags + VARIANTS[variant])
      rates[variant].append((median_rate(rec), rec['other_cpu_share']))
  return rates


def main(argv=None):
  args = parse_args(sys.argv[1:] if argv is None else argv)
  variants = args.variants.split(',')
  runner = Runner(max_other_share=(None if args.max_other_share < 0
                                   else args.max_other_share),
                  result_dir=args.result_dir,
                  log=lambda line: print('  ' + line, flush=True))
  print('== engines: images/sec (median step), ratio to %s; batch %d, %d '
        'timed steps, %d round(s)' % (BASELINE, args.batch_size,
                                      args.num_batches, args.repeats))
  print('%-11s %-9s' % ('model', 'dtype') + ''.join(
      '%18s' % v for v in variants) + '   others')
  for model in args.models.split(','):
    for dtype in args.dtypes.split(','):
      rates = measure(runner, args, model, dtype, variants)
      medians = {v: statistics.median(r for r, _ in rates[v])
                 for v in variants}
      base = medians.get(BASELINE)
      cells = []
      for v in variants:
        ratio = ' (%.2fx)' % (medians[v] / base) if base and v != BASELINE \
            else ''
        cells.append('%18s' % ('%.2f%s' % (medians[v], ratio)))
      shares = [s for v in variants for _, s in rates[v] if s is not None]
      print('%-11s %-9s' % (model, dtype) + ''.join(cells) + '   ' +
            share_text(max(shares) if shares else None), flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
