"""Convergence on generated data: time and epochs to a stated top-1 target.

Writes the generated dataset (`build-dataset --generate`,
preprocessing/shapes_data.py) in a temporary folder, then trains each
configuration to its target --runs times per engine, each run a fresh
process with its own --tf_random_seed (as MLPerf's runs differ in seed),
and prints every run's time to target (wall clock from the run's start, and
training alone), epochs and steps to target, then per engine: how many
reached it, the median and range of the time, MLPerf's score (the mean of
the runs left when the fastest and the slowest are dropped) and the epochs.

  python benchmarks/convergence.py [--configs resnet20,alexnet
      --engines graph,tf2 --runs 5 --quick]

Configurations (the target, the epochs allowed, an evaluation every epoch):
  resnet20   CIFAR-10 format: 10 classes, 500 train and 100 validation
             images per class, 32x32; batch 32, momentum 0.9, lr 0.1.
  alexnet    ImageNet format: 10 classes, 60 train and 20 validation per
             class, 64x64 JPEGs read at the model's 227x227; batch 32,
             momentum 0.9, lr 0.01; target top-1 0.2 (twice chance) within
             16 epochs. The ImageNet-size model that fits minutes here:
             AlexNet trains at ~55 images/sec on this machine, and without
             batch norm it stays near chance for ~8 epochs of 600 images
             (lr 0.002: 0.19 after 12 epochs; lr 0.01: 0.23). MobileNet v2
             (26 images/sec) lowered its training loss from 7.6 to 0.9 in
             15 epochs (470 steps) while its validation top-1 stayed at
             chance; why is not investigated yet (the evaluation reads
             the trained variables: no new ones are made for it).
--quick: one run per engine of resnet20, 1 epoch, no target claims (checks
the script).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from preprocessing import shapes_data  # pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.measure import cpu_share  # pylint: disable=g-import-not-at-top

HARNESS = os.path.join(REPO, 'tf_cnn_benchmarks.py')

# name -> (format, dataset size: classes, train and validation per class,
# image size; harness flags; target top-1; epochs allowed)
CONFIGS = {
    'resnet20': ('cifar10', (10, 500, 100, 32),
                 ['--model=resnet20', '--data_name=cifar10',
                  '--batch_size=32', '--optimizer=momentum',
                  '--init_learning_rate=0.1'], 0.8, 20),
    'alexnet': ('imagenet', (10, 60, 20, 64),
                ['--model=alexnet', '--data_name=imagenet',
                 '--batch_size=32', '--optimizer=momentum',
                 '--init_learning_rate=0.01'], 0.2, 16),
}


def write_data(name, root):
  fmt, (classes, train, held, size), _, _, _ = CONFIGS[name]
  directory = os.path.join(root, name)
  if fmt == 'cifar10':
    shapes_data.write_cifar10(directory, train, held, seed=0)
  else:
    from preprocessing import build_dataset  # pylint: disable=g-import-not-at-top
    build_dataset.write_generated_imagenet(directory, classes, train, held,
                                           size, size, seed=0,
                                           num_train_shards=4)
  return directory


def run_once(name, data_dir, engine, seed, result_dir, epochs=None,
             target=None):
  """The run's record (a fresh process)."""
  _, _, flags, default_target, default_epochs = CONFIGS[name]
  cmd = [sys.executable, HARNESS, '--device=cpu', '--engine=%s' % engine,
         '--data_dir=%s' % data_dir, '--result_dir=%s' % result_dir,
         '--num_warmup_batches=0', '--display_every=100000',
         '--eval_during_training_every_n_epochs=1',
         '--num_epochs=%g' % (epochs or default_epochs),
         '--stop_at_top_1_accuracy=%g' % (target or default_target),
         '--tf_random_seed=%d' % seed, '--label=convergence-%s' % name] + flags
  env = dict(os.environ, PYTHONPATH=REPO)
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  # A time to target is only as good as the machine's quiet: the share of
  # the CPU other processes took meanwhile is printed beside it.
  with cpu_share.OtherProcessesMeter() as meter:
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                         env=env)
  # 0: reached; 5: ran to the end short of it. Anything else failed.
  if out.returncode not in (0, 5):
    raise RuntimeError('%s\nexit %d\n%s%s' % (' '.join(cmd), out.returncode,
                                              out.stdout[-3000:],
                                              out.stderr[-3000:]))
  path = [l for l in out.stdout.splitlines() if l.startswith('Run record: ')]
  with open(path[-1][len('Run record: '):].strip()) as f:
    record = json.load(f)
  record['other_cpu_share'] = meter.share
  return record


def mlperf_score(times):
  """MLPerf's: drop the fastest and the slowest, average the rest."""
  if len(times) < 3:
    return statistics.mean(times)
  return statistics.mean(sorted(times)[1:-1])


def summarise(name, engine, records, target):
  reached = [r['summary'] for r in records
             if r['status'] == 'ok' and r['summary']['time_to_target_sec']]
  line = '%-9s %-5s reached %d of %d' % (name, engine, len(reached),
                                         len(records))
  if reached:
    times = [s['time_to_target_sec'] for s in reached]
    training = [s['training_time_to_target_sec'] for s in reached]
    epochs = [s['epochs_to_target'] for s in reached]
    line += (': time to top-1 %.2f median %.1f s (range %.1f-%.1f), MLPerf '
             'score %.1f s; training alone median %.1f s; epochs median %.1f '
             '(range %.1f-%.1f)' % (
                 target, statistics.median(times), min(times), max(times),
                 mlperf_score(times), statistics.median(training),
                 statistics.median(epochs), min(epochs), max(epochs)))
  rates = [r['summary']['images_per_sec'] for r in records
           if r['summary']['images_per_sec']]
  if rates:
    line += '; %.0f images/sec' % statistics.median(rates)
  shares = [r['other_cpu_share'] for r in records
            if r['other_cpu_share'] is not None]
  if shares:
    line += '; others used %.0f-%.0f%% of the CPU' % (100 * min(shares),
                                                      100 * max(shares))
  return line


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--configs', default='resnet20,alexnet')
  parser.add_argument('--engines', default='graph,tf2')
  parser.add_argument('--runs', type=int, default=5)
  parser.add_argument('--quick', action='store_true')
  parser.add_argument('--result_dir', default=None,
                      help='Keep the run records here (default: a '
                      'temporary folder, removed).')
  args = parser.parse_args(argv)
  names = args.configs.split(',')
  unknown = [n for n in names if n not in CONFIGS]
  if unknown:
    parser.error('unknown config(s) %s; choose from %s'
                 % (', '.join(unknown), ', '.join(CONFIGS)))
  engines = args.engines.split(',')
  epochs = target = None
  if args.quick:
    names, args.runs, epochs, target = ['resnet20'], 1, 1, 0.99
  root = tempfile.mkdtemp(prefix='convergence_')
  result_dir = args.result_dir or os.path.join(root, 'runs')
  summaries = []
  try:
    for name in names:
      data_dir = write_data(name, root)
      goal = target or CONFIGS[name][3]
      for engine in engines:
        records = []
        for run in range(args.runs):
          start = time.time()
          rec = run_once(name, data_dir, engine, 1000 + run, result_dir,
                         epochs, target)
          records.append(rec)
          s = rec['summary']
          best = max((e['top_1_accuracy'] for e in s['evaluations']),
                     default=0.0)
          print('%-9s %-5s seed %d: %s' % (
              name, engine, 1000 + run,
              ('top-1 %.2f in %.1f s (training %.1f s), %.2f epochs, %d '
               'steps' % (goal, s['time_to_target_sec'],
                          s['training_time_to_target_sec'],
                          s['epochs_to_target'], s['steps_to_target']))
              if s['time_to_target_sec'] else
              'not reached (best top-1 %.3f)' % best) +
                '  [%.0f s in all; others used %s of the CPU]' % (
                    time.time() - start,
                    'n/a' if rec['other_cpu_share'] is None else
                    '%.0f%%' % (100 * rec['other_cpu_share'])), flush=True)
        summaries.append(summarise(name, engine, records, goal))
    print('-- summary (%d runs each, this machine)' % args.runs)
    for line in summaries:
      print(line)
  finally:
    shutil.rmtree(root, ignore_errors=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
