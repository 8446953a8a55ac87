#!/usr/bin/env python3
"""Training images/sec of the headline models, to track performance.

  python benchmarks/model_speed.py --batch_size=32 [--models=resnet50,...]
      [--num_batches=20] [--repeats=1] [any other benchmark flag]

Each (model, repeat) runs in a fresh process through the real command line,
so one model's memory or thread state cannot colour the next; each run also
leaves its JSON record in --result_dir for later comparison. Prints one
line per model: the median images/sec over the repeats, and the ratio to the
first model so that relative speed can be read from a single run of this
script (absolute numbers vary +-30% between runs on a shared machine).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, 'tf_cnn_benchmarks.py')


def run_once(model, args, extra, result_dir):
  cmd = [sys.executable, SCRIPT, '--model=%s' % model,
         '--batch_size=%d' % args.batch_size,
         '--num_batches=%d' % args.num_batches,
         '--num_warmup_batches=%d' % args.num_warmup_batches,
         '--device=cpu', '--result_dir=%s' % result_dir] + extra
  before = set(os.listdir(result_dir))
  out = subprocess.run(cmd, capture_output=True, text=True)
  if out.returncode != 0:
    sys.stderr.write(out.stdout + out.stderr)
    raise SystemExit('%s failed with exit code %d' % (model,
                                                       out.returncode))
  (new,) = set(os.listdir(result_dir)) - before
  with open(os.path.join(result_dir, new)) as f:
    return json.load(f)['summary']['images_per_sec']


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--models', default='resnet50,inception3,vgg16')
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--num_batches', type=int, default=20)
  parser.add_argument('--num_warmup_batches', type=int, default=3)
  parser.add_argument('--repeats', type=int, default=1)
  parser.add_argument('--result_dir', default=None)
  args, extra = parser.parse_known_args()
  result_dir = args.result_dir or tempfile.mkdtemp(prefix='model_speed_')
  os.makedirs(result_dir, exist_ok=True)
  print('%-12s %12s %10s' % ('model', 'images/sec', 'ratio'))
  first = None
  for model in args.models.split(','):
    rates = [run_once(model, args, extra, result_dir)
             for _ in range(args.repeats)]
    rate = statistics.median(rates)
    first = first or rate
    print('%-12s %12.2f %10.3f' % (model, rate, rate / first), flush=True)
  print('records: %s' % result_dir)


if __name__ == '__main__':
  main()
