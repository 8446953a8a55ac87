#!/usr/bin/env python3
"""The effect of each performance lever on one model, as ratios to a baseline.

  python benchmarks/levers.py [--model=resnet50] [--batch_size=32]
      [--num_batches=6] [--repeats=1] [--variants=baseline,xla,...]

Each variant is the harness's command line with a few flags (or environment
variables) changed; every run is a fresh process, variants interleaved when
repeated, and images/sec are compared as medians to the baseline of the
same script run. ``--list`` shows the variants.
"""

import argparse
import statistics
import sys

from subprocess_runs import Runner, median_rate, model_flags, share_text

# name -> (harness flags, environment, what it changes)
VARIANTS = {
    'baseline': ([], {}, 'defaults: NHWC, float32, TF-chosen thread pools'),
    'xla': (['--xla_compile'], {},
            '--xla_compile (XLA auto-clustering, CPU included)'),
    'nchw': (['--data_format=NCHW'], {}, 'NCHW activations'),
    'onednn_off': ([], {'TF_ENABLE_ONEDNN_OPTS': '0'},
                   'TF_ENABLE_ONEDNN_OPTS=0 (Eigen kernels)'),
    'onednn_caller_thread': ([], {
        'TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD': '1'},
                             'oneDNN threadpool also uses the calling thread'),
    'onednn_system_alloc': ([], {'TF_ONEDNN_USE_SYSTEM_ALLOCATOR': '1'},
                            'oneDNN scratch memory from the system allocator'),
    'tf_bfc_allocator': ([], {'TF_CPU_ALLOCATOR_USE_BFC': 'true'},
                         "TensorFlow's BFC allocator for CPU tensors"),
    'malloc_defaults': (['--tune_malloc=false'], {},
                        "glibc malloc's defaults: freed memory goes back to "
                        'the kernel and is faulted in again'),
    'onednn_blocked_format': ([], {'TF_ENABLE_MKL_NATIVE_FORMAT': '0'},
                              'ask for oneDNN blocked layouts between ops'),
    'onednn_fpmath_bf16': ([], {'ONEDNN_DEFAULT_FPMATH_MODE': 'BF16'},
                           'float32 ops may compute in bf16 inside oneDNN '
                           '(changes float32 numerics)'),
    'intra2_inter1': (['--num_intra_threads=2', '--num_inter_threads=1'], {},
                      'intra 2 / inter 1 threads'),
    'intra2_inter2': (['--num_intra_threads=2', '--num_inter_threads=2'], {},
                      'intra 2 / inter 2 threads'),
    'intra1_inter2': (['--num_intra_threads=1', '--num_inter_threads=2'], {},
                      'intra 1 / inter 2 threads'),
    'bf16': (['--use_fp16'], {}, '--use_fp16 (bfloat16 compute)'),
    # float16 on a CPU is for checking what a GPU run computes; README's "On
    # GPUs" quotes its speed against bf16, which one is slower depending on
    # the host.
    'fp16': (['--use_fp16', '--fp16_dtype=float16'], {},
             '--use_fp16 --fp16_dtype=float16 (float16 compute, loss '
             'scale 128)'),
    'group2': (['--batch_group_size=2'], {}, '--batch_group_size=2'),
    'towers2_ps': (['--num_gpus=2', '--half_batch',
                    '--variable_update=parameter_server'], {},
                   '2 CPU towers x half batch, parameter_server'),
    'towers2_replicated': (['--num_gpus=2', '--half_batch',
                            '--variable_update=replicated'], {},
                           '2 CPU towers x half batch, replicated'),
}


def main(argv):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument('--model', default='resnet50')
  p.add_argument('--batch_size', type=int, default=32)
  p.add_argument('--num_batches', type=int, default=6)
  p.add_argument('--num_warmup_batches', type=int, default=2)
  p.add_argument('--repeats', type=int, default=1)
  p.add_argument('--variants', default='baseline,xla,nchw,'
                 'onednn_off,intra2_inter1,intra1_inter2,bf16')
  p.add_argument('--max_other_share', type=float, default=0.25)
  p.add_argument('--list', action='store_true')
  args, extra = p.parse_known_args(argv)
  if args.list:
    for name, (_, _, what) in VARIANTS.items():
      print('%-20s %s' % (name, what))
    return 0
  names = args.variants.split(',')
  if 'baseline' not in names:
    names.insert(0, 'baseline')
  runner = Runner(None if args.max_other_share < 0 else args.max_other_share,
                  log=lambda m: print('  .. ' + m, file=sys.stderr,
                                      flush=True))
  print('benchmarks/levers.py %s' % ' '.join(argv), flush=True)
  rates = {n: [] for n in names}
  shares = {n: [] for n in names}
  for _ in range(args.repeats):
    for name in names:
      flags, env, _ = VARIANTS[name]
      batch = args.batch_size
      if '--half_batch' in flags:
        flags = [f for f in flags if f != '--half_batch']
        batch //= 2
      rec = runner.harness(
          model_flags(args.model, batch, args.num_batches,
                      args.num_warmup_batches) + ['--peak_gflops=1'] + flags +
          extra, extra_env=env)
      rates[name].append(median_rate(rec))
      shares[name].append(rec['other_cpu_share'])
      print('  %-20s %8.2f images/sec  others%s' % (
          name, rates[name][-1], share_text(rec['other_cpu_share'])),
            flush=True)
  base = statistics.median(rates['baseline'])
  print('\n%s, batch %d: images/sec (batch / median step time; median over '
        'repeats) and ratio to baseline' % (args.model, args.batch_size))
  for name in names:
    rate = statistics.median(rates[name])
    worst = max((s for s in shares[name] if s is not None), default=None)
    print('%-20s %8.2f  %5.2fx  others<=%s  %s' % (
        name, rate, rate / base, share_text(worst).strip(),
        VARIANTS[name][2]))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
