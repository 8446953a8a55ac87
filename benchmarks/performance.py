#!/usr/bin/env python3
"""Is the harness fast? Every performance goal, measured in one run, as ratios.

  python benchmarks/performance.py [--models=resnet50,inception3,vgg16]
      [--batch_size=32] [--num_batches=10] [--quick] [harness flags ...]

Sections (each measurement a fresh process, started when other processes
leave the CPU mostly idle; the ``others`` column is the CPU share other
processes took while it ran):

1. peak: this machine's float32 and bfloat16 peak GFLOP/s (the best of a
   matmul and conv2d micro-benchmarks, tf_cnn_benchmarks/measure/peak.py), measured
   now and passed to every run as --peak_gflops.
2. models: images/sec and model FLOP utilisation (MFU) per model, float32
   and bfloat16 (--use_fp16), the bf16/fp32 speed ratio and how closely the
   two loss curves agree.
3. keras: ours vs the same network from keras.applications trained in a
   tf.function with SGD, same batch and data (benchmarks/keras_reference.py).
4. overhead: the harness on --model=trivial vs a bare session.run loop of
   the same graph (benchmarks/bare_session_loop.py), with and without
   --batch_group_size; runs interleaved, medians compared.
5. input: the ImageNet input pipeline alone (benchmarks/input_pipeline.py)
   vs resnet50's training rate.
6. ceiling: one traced step per model and dtype (--num_inter_threads=1, so
   op durations add up to the step): the share of op time in FLOP-counted
   ops and the MFU those ops alone reach, the ceiling no fusing of the
   other ops can pass (tf_cnn_benchmarks/measure/op_time.py).

Unknown flags go to every harness model run (e.g. --xla_compile). Ratios
are what to read: absolute numbers move +-30% between runs on a shared
machine.
"""

import argparse
import os
import re
import statistics
import sys

from subprocess_runs import REPO, Runner, median_rate, model_flags, share_text

from tf_cnn_benchmarks.measure import op_time  # pylint: disable=g-import-not-at-top

# Our model name -> keras.applications name.
KERAS_NAMES = {'resnet50': 'ResNet50', 'inception3': 'InceptionV3',
               'vgg16': 'VGG16'}
KERAS_DEFAULT = ('resnet50', 'inception3')


def parse_args(argv):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument('--models', default='resnet50,inception3,vgg16')
  p.add_argument('--batch_size', type=int, default=32)
  p.add_argument('--num_batches', type=int, default=10)
  p.add_argument('--num_warmup_batches', type=int, default=3)
  p.add_argument('--keras_models', default=None,
                 help='Models to compare with keras.applications; default '
                      'resnet50 and inception3 when measured.')
  p.add_argument('--overhead_steps', type=int, default=400)
  p.add_argument('--overhead_repeats', type=int, default=3)
  p.add_argument('--batch_group_size', type=int, default=10,
                 help='Group size tried in the overhead section.')
  p.add_argument('--input_steps', type=int, default=40)
  p.add_argument('--sections',
                 default='peak,models,keras,overhead,input,ceiling')
  p.add_argument('--max_other_share', type=float, default=0.25,
                 help='Start a measurement only when other processes use at '
                      'most this share of the CPU (negative: never wait).')
  p.add_argument('--result_dir', default=None)
  p.add_argument('--quick', action='store_true',
                 help='CI size: resnet50 only, batch 2, 3 steps, short '
                      'overhead and input runs.')
  args, extra = p.parse_known_args(argv)
  if args.quick:
    # Batch 2: the sections' machinery, not their numbers, is what a
    # quick run shows (batch 8 took 7 minutes on a 2-core AVX2 host).
    args.models, args.batch_size = 'resnet50', 2
    args.num_batches, args.num_warmup_batches = 3, 1
    args.overhead_steps, args.overhead_repeats = 100, 1
    args.input_steps = 10
  return args, extra


def out(text=''):
  print(text, flush=True)


def section_peak(runner):
  peaks = {}
  for dtype in ('float32', 'bfloat16'):
    e = runner.json_line(['-m', 'tf_cnn_benchmarks.measure.peak', dtype])
    peaks[dtype] = e['gflops']
    out('peak %-8s %7.1f GFLOP/s  (matmul %.1f, conv2d %.1f; %s)  others%s'
        % (dtype, e['gflops'], e['matmul_gflops'], e['conv2d_gflops'],
           ', '.join('%s %.1f' % kv for kv in
                     sorted(e['benchmarks_gflops'].items())),
           share_text(e['other_cpu_share'])))
  return peaks


def _model_flags(args, model, extra):
  return model_flags(model, args.batch_size, args.num_batches,
                     args.num_warmup_batches) + list(extra)


def _late_mean(losses):
  half = losses[len(losses) // 2:]
  return sum(half) / len(half)


def section_models(runner, args, extra, peaks):
  rows = {}
  out('images/sec = batch / median step time; total = the harness\'s '
      '"total images/sec"; MFU from the median rate, against the peak of '
      'the run\'s dtype')
  out('%-11s %-8s %10s %8s %10s %9s %7s %7s' % (
      'model', 'dtype', 'images/sec', 'total', 'GFLOP/img', 'GFLOP/s', 'MFU',
      'others'))
  for model in args.models.split(','):
    for dtype in ('float32', 'bfloat16'):
      flags = _model_flags(args, model, extra)
      if dtype == 'bfloat16':
        flags.append('--use_fp16')
      if peaks.get(dtype):
        flags.append('--peak_gflops=%.3f' % peaks[dtype])
      rec = runner.harness(flags)
      s = rec['summary']
      rows[(model, dtype)] = rec
      rate = median_rate(rec)
      gflops = (s['gflops_per_image'] or 0) * rate
      out('%-11s %-8s %10.2f %8.2f %10.2f %9.1f %6s %7s' % (
          model, dtype, rate, s['images_per_sec'], s['gflops_per_image'] or 0,
          gflops, '%.1f%%' % (100 * gflops / peaks[dtype])
          if peaks.get(dtype) else 'n/a',
          share_text(rec['other_cpu_share'])))
    fp32, bf16 = rows[(model, 'float32')], rows[(model, 'bfloat16')]
    l32, l16 = fp32['timing']['step_losses'], bf16['timing']['step_losses']
    out('%-11s bf16/fp32 images/sec = %.2fx (total: %.2fx); loss first -> '
        'mean of the last half: fp32 %.3f -> %.3f, bf16 %.3f -> %.3f' % (
            model, median_rate(bf16) / median_rate(fp32),
            bf16['summary']['images_per_sec'] /
            fp32['summary']['images_per_sec'], l32[0], _late_mean(l32),
            l16[0], _late_mean(l16)))
  return rows


def section_keras(runner, args, rows, extra):
  wanted = (args.keras_models.split(',') if args.keras_models else
            [m for m in args.models.split(',') if m in KERAS_DEFAULT])
  results = {}
  out('images/sec of the median step, both sides')
  out('%-11s %12s %12s %10s %7s' % ('model', 'ours img/s', 'keras img/s',
                                    'ours/keras', 'others'))
  for model in wanted:
    ours = rows.get((model, 'float32'))
    if ours is None:
      ours = runner.harness(_model_flags(args, model, extra))
    keras = runner.json_line([
        os.path.join(REPO, 'benchmarks', 'keras_reference.py'),
        '--model=%s' % KERAS_NAMES[model], '--batch_size=%d' % args.batch_size,
        '--num_batches=%d' % args.num_batches,
        '--num_warmup_batches=%d' % args.num_warmup_batches])
    rate = median_rate(ours)
    keras_rate = args.batch_size / statistics.median(keras['step_times_sec'])
    results[model] = (rate, keras_rate)
    out('%-11s %12.2f %12.2f %9.2fx %7s' % (
        model, rate, keras_rate, rate / keras_rate,
        share_text(keras['other_cpu_share'])))
  return results


def section_overhead(runner, args):
  common = ['--model=trivial', '--batch_size=32',
            '--num_batches=%d' % args.overhead_steps,
            '--num_warmup_batches=20']
  bare_cmd = [os.path.join(REPO, 'benchmarks', 'bare_session_loop.py'),
              '--device=cpu'] + common
  group = '--batch_group_size=%d' % args.batch_group_size
  rates = {'bare': [], 'bare_loss': [], 'harness': [], 'harness_grouped': []}
  outside = {'harness': [], 'harness_grouped': []}
  shares = []
  for _ in range(args.overhead_repeats):
    for key, data in (
        ('bare', runner.json_line(bare_cmd)),
        ('bare_loss', runner.json_line(bare_cmd + ['--fetch_loss'])),
        ('harness', runner.harness(common + ['--peak_gflops=1'])),
        ('harness_grouped',
         runner.harness(common + ['--peak_gflops=1', group]))):
      rate = data['images_per_sec'] if 'images_per_sec' in data else (
          data['summary']['images_per_sec'])
      rates[key].append(rate)
      shares.append(data['other_cpu_share'])
      if key in outside:
        outside[key].append(_share_outside_session_run(data))
  med = {k: statistics.median(v) for k, v in rates.items()}
  out('step time vs the bare loop: "bare" runs the train op only; "+loss" '
      'also fetches the loss the harness reports')
  for key, label in (('bare', 'bare session.run(train_op)'),
                     ('bare_loss', 'bare session.run([train_op, loss])'),
                     ('harness', 'harness'),
                     ('harness_grouped', 'harness ' + group)):
    out('trivial %-36s %8.1f images/sec  %+5.1f%% vs bare  %+5.1f%% vs '
        '+loss  (%s)' % (
            label, med[key], 100 * (med['bare'] / med[key] - 1),
            100 * (med['bare_loss'] / med[key] - 1),
            ', '.join('%.0f' % r for r in rates[key])))
  worst = max((x for x in shares if x is not None), default=None)
  out('others took at most %s of the CPU in these runs' %
      share_text(worst).strip())
  # Separate processes differ by several % whatever they run, so the ratios
  # above resolve a few %. Within one process the harness's own cost is
  # exact: the timed loop's wall time not spent inside session.run.
  out('harness time outside session.run in its timed loop (median): %.2f%%, '
      'with %s: %.2f%%' % (
          100 * statistics.median(outside['harness']), group,
          100 * statistics.median(outside['harness_grouped'])))
  return med


def _share_outside_session_run(rec):
  timing = rec['timing']
  wall = timing['timed_wall_time_sec']
  return (wall - sum(timing['step_times_sec'])) / wall


def section_input(runner, args, rows, extra):
  script = os.path.join(REPO, 'benchmarks', 'input_pipeline.py')
  if not (os.path.exists(script) and os.path.exists(
      os.path.join(REPO, 'preprocessing', 'input_benchmark.py'))):
    out('input: skipped (no input pipeline benchmark in this checkout)')
    return None
  stdout, share = runner.run([sys.executable, script,
                                 '--batch_size=%d' % args.batch_size,
                                 '--steps=%d' % args.input_steps])
  match = re.search(r'input-only images/sec: ([\d.]+)', stdout)
  input_rate = float(match.group(1))
  train = rows.get(('resnet50', 'float32'))
  if train is None:
    train = runner.harness(_model_flags(args, 'resnet50', extra))
  train_rate = median_rate(train)
  out('input-only %.1f images/sec vs resnet50 training %.2f images/sec: '
      '%.1fx  (others %s)' % (input_rate, train_rate, input_rate / train_rate,
                              share_text(share).strip()))
  return input_rate / train_rate


def section_ceiling(runner, args, extra, peaks):
  for model in args.models.split(','):
    for dtype in ('float32', 'bfloat16'):
      trace = os.path.join(runner.result_dir, 'trace_%s_%s.json' % (
          model, dtype))
      flags = model_flags(model, args.batch_size, 1, args.num_warmup_batches) + [
          '--num_inter_threads=1', '--trace_file=%s' % trace] + list(extra)
      if dtype == 'bfloat16':
        flags.append('--use_fp16')
      rec = runner.harness(flags)
      step_gflops = (rec['summary']['gflops_per_image'] *
                     rec['config']['global_batch_size'])
      out('%s %s (traced step, others%s):' % (
          model, dtype, share_text(rec['other_cpu_share'])))
      out('  ' + op_time.describe(op_time.from_chrome_trace(trace),
                                  step_gflops, peaks.get(dtype),
                                  top=6).replace('\n', '\n  '))


def main(argv):
  args, extra = parse_args(argv)
  share = None if args.max_other_share < 0 else args.max_other_share
  runner = Runner(max_other_share=share, result_dir=args.result_dir,
                  log=lambda m: print('  .. ' + m, file=sys.stderr,
                                      flush=True))
  sections = args.sections.split(',')
  out('benchmarks/performance.py %s' % ' '.join(argv))
  out('records: %s' % runner.result_dir)
  peaks, rows = {}, {}
  if 'peak' in sections:
    out('\n== 1. peak')
    peaks = section_peak(runner)
  if 'models' in sections:
    out('\n== 2. models (batch %d, synthetic, %d timed steps)' % (
        args.batch_size, args.num_batches))
    rows = section_models(runner, args, extra, peaks)
  if 'keras' in sections:
    out('\n== 3. ours vs keras.applications (float32, tf.function, SGD)')
    section_keras(runner, args, rows, extra)
  if 'overhead' in sections:
    out('\n== 4. harness overhead (trivial, batch 32, %d steps, median of %d)'
        % (args.overhead_steps, args.overhead_repeats))
    section_overhead(runner, args)
  if 'input' in sections:
    out('\n== 5. input pipeline vs training')
    section_input(runner, args, rows, extra)
  if 'ceiling' in sections:
    out('\n== 6. MFU ceiling: FLOP-counted ops alone, from a traced step')
    section_ceiling(runner, args, extra, peaks)
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
