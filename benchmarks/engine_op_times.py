#!/usr/bin/env python3
"""Where each engine's step goes: op time by type over the timed loop.

  python benchmarks/engine_op_times.py [--variants=graph,tf2,tf2_jit]
      [--top=12] [--max_other_share=0.25] -- --model=resnet50 \
      --batch_size=16 --num_batches=6 --num_warmup_batches=2 [--use_fp16]

benchmarks/engines.py says how fast each engine is; this says why. Each
variant (engines.py's: graph, tf2, tf2_jit) runs as a fresh harness process
whose timed loop, and nothing else, runs under TensorFlow's profiler
(tf.profiler.experimental): the same tracer for a session's steps and a
tf.function's, so their op times compare, where the graph engine's own
--trace_file (a session's FULL_TRACE) has no tf.function twin. The profile's
op self times (tf_cnn_benchmarks/measure/op_time.py: from_xspace) are
summed by op type and divided by the timed steps.

Per variant it prints the wall time of a profiled step (the mean of the
run record's timed steps: profiling slows both engines, so compare rates
with engines.py, not here), the op time per step (ops on both cores
add up: op time above the wall time means ops overlapped), and the op types
taking the most time, side by side. Wall time the ops do not fill is the
runtime's: scheduling, waiting for the input, the step's own overhead.
"""

import argparse
import glob
import os
import statistics
import sys
import tempfile

from subprocess_runs import Runner, share_text
import engines

# pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.measure import op_time

_CHILD_FLAG = '--profile_timed_loop_into'


def _profiled_harness(profile_dir, harness_argv):
  """The harness CLI with its timed loop (only) under the profiler."""
  import tensorflow as tf
  from tf_cnn_benchmarks import cli
  from tf_cnn_benchmarks.run import step_loop
  timed_loop = step_loop.StepLoop.run

  def run(self, *args, **kwargs):
    tf.profiler.experimental.start(profile_dir)
    try:
      return timed_loop(self, *args, **kwargs)
    finally:
      tf.profiler.experimental.stop()
  step_loop.StepLoop.run = run
  return cli.main(['tf_cnn_benchmarks'] + harness_argv)


def profile(runner, flags, variant):
  """(OpTimes per step, mean wall seconds of a profiled step, others'
  share), the steps and their times from the run's record."""
  with tempfile.TemporaryDirectory(prefix='engine_op_times_') as profile_dir:
    rec = runner.harness(
        flags + engines.VARIANTS[variant],
        entry=(os.path.abspath(__file__),
               '%s=%s' % (_CHILD_FLAG, profile_dir), '--'))
    (path,) = glob.glob(os.path.join(profile_dir, '**', '*.xplane.pb'),
                        recursive=True)
    times = op_time.from_xspace(path)
  step_times = rec['timing']['step_times_sec']
  steps = len(step_times)
  per_step = op_time.OpTimes(
      {t: s / steps for t, s in times.seconds_by_type.items()},
      {t: c // steps for t, c in times.count_by_type.items()})
  return per_step, statistics.mean(step_times), rec['other_cpu_share']


def main(argv=None):
  argv = sys.argv[1:] if argv is None else argv
  if argv and argv[0].startswith(_CHILD_FLAG + '='):
    rest = argv[1:]
    return _profiled_harness(argv[0].split('=', 1)[1],
                             rest[1:] if rest[:1] == ['--'] else rest)
  p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  p.add_argument('--variants', default=','.join(engines.VARIANTS))
  p.add_argument('--top', type=int, default=12)
  p.add_argument('--max_other_share', type=float, default=0.25,
                 help='wait until other processes use less of the CPU '
                 '(negative: do not wait)')
  p.add_argument('flags', nargs='*', help='harness flags for every variant')
  args = p.parse_args(argv)
  variants = args.variants.split(',')
  unknown = [v for v in variants if v not in engines.VARIANTS]
  if unknown:
    p.error('unknown variant(s) %s; known: %s' % (
        ', '.join(unknown), ', '.join(engines.VARIANTS)))
  runner = Runner(max_other_share=(None if args.max_other_share < 0
                                   else args.max_other_share),
                  log=lambda line: print('  ' + line, flush=True))
  got = {v: profile(runner, args.flags, v) for v in variants}
  print('== op time per timed step (ms), tf.profiler; %s' %
        ' '.join(args.flags))
  print('%-34s' % '' + ''.join('%14s' % v for v in variants))
  rows = [('wall time of a profiled step', lambda t, w: 1e3 * w),
          ('op time (all ops, both cores)', lambda t, w: 1e3 * t.total_sec),
          ('  conv/matmul (FLOP-counted)', lambda t, w: 1e3 * t.counted_sec),
          ('  the other ops', lambda t, w: 1e3 * (t.total_sec -
                                                 t.counted_sec))]
  for label, value in rows:
    print('%-34s' % label + ''.join('%14.1f' % value(*got[v][:2])
                                    for v in variants))
  print('%-34s' % 'others\' CPU share' + ''.join(
      '%14s' % share_text(got[v][2]) for v in variants))
  ranked = {}
  for v in variants:
    for op_type, sec in got[v][0].seconds_by_type.items():
      ranked[op_type] = max(ranked.get(op_type, 0.0), sec)
  print('top op types (ms per step; count per step):')
  for op_type, _ in sorted(ranked.items(), key=lambda kv: -kv[1])[:args.top]:
    cells = []
    for v in variants:
      times = got[v][0]
      cells.append('%14s' % ('%.1f x%d' % (
          1e3 * times.seconds_by_type.get(op_type, 0.0),
          times.count_by_type.get(op_type, 0))))
    print('  %-32s' % op_type + ''.join(cells))
  return 0


if __name__ == '__main__':
  sys.exit(main())
