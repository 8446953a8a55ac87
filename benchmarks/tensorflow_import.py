#!/usr/bin/env python3
"""How long `import tensorflow` takes under each of several interpreters.

  python benchmarks/tensorflow_import.py --pythons=A,B[,...] [--repeats=5]

Each A, B is a Python with TensorFlow installed (a venv's bin/python). Each
round imports TensorFlow once in a fresh process of every interpreter, in
turn, so a drift of the machine hits them alike; the table gives each one's
median seconds and its ratio to the first. The import is timed inside the
process (perf_counter around the import statement), as the harness loads
it: without its eager load of Keras (tf_cnn_benchmarks/process/keras_skip).

Why it matters: every run, every cluster task and every test that starts
one pays this first; the suite is mostly such starts, and how the
interpreter was built (profile-guided and link-time optimisation or not, a
shared libpython or not) moves it by half (README: .ci/run's choice).
"""

import argparse
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TIMED_IMPORT = '''
import sys, time
sys.path.insert(0, %r)
from tf_cnn_benchmarks.process import keras_skip
start = time.perf_counter()
with keras_skip.skipping_keras_eager_load():
  import tensorflow
print(time.perf_counter() - start)
''' % REPO


def import_seconds(python):
  out = subprocess.run([python, '-c', _TIMED_IMPORT], capture_output=True,
                       text=True, timeout=600,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'))
  if out.returncode != 0:
    raise SystemExit('%s could not import TensorFlow (exit %d): %s' % (
        python, out.returncode, out.stderr.strip()[-600:]))
  return float(out.stdout.split()[-1])


def main(argv):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--pythons', required=True,
                      help='comma-separated interpreters, the first the base')
  parser.add_argument('--repeats', type=int, default=5)
  args = parser.parse_args(argv)
  pythons = args.pythons.split(',')
  # By position: the same interpreter may be given twice (an A/A check).
  seconds = [[] for _ in pythons]
  for _ in range(args.repeats):
    for i, python in enumerate(pythons):
      seconds[i].append(import_seconds(python))
  base = statistics.median(seconds[0])
  print('%-48s %9s %8s  %s' % ('python', 'median s', 'ratio', 'each s'))
  for python, times in zip(pythons, seconds):
    median = statistics.median(times)
    print('%-48s %9.2f %7.2fx  %s' % (
        python, median, median / base, ' '.join('%.2f' % s for s in times)))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
