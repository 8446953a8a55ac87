"""Stand-in for tf_cnn_benchmarks.py in runner tests: fast, scriptable.

--model picks the behaviour: `fail` exits 3, `failed_record` writes a failed
record and exits 1, `short_of_target` a target_not_reached record and exits
5, `norecord` exits 0 without a record, `sleep` sleeps
(timeouts); any other model writes an ok record whose images/sec is
--batch_size / 0.01 and prints the original's `total images/sec:` line.
It also echoes its interpreter, and any library preloaded into it
(LD_PRELOAD: an allocator such as tcmalloc), so tests can see which Python
ran it and with what.
--jitter F spreads each run's step time by up to +-F at random (repeats then
differ, as real ones do); TF_CNN_BENCHMARKS_TEST_FAKE_FAIL_ONCE=PATH fails
the run when PATH does not exist yet (creating it: one failure, then
successes); TF_CNN_BENCHMARKS_TEST_FAKE_BUSY_ONCE=PATH records its timed
loop as shared with other processes (other_cpu_share 0.5) when PATH does not
exist yet, creating it (TF_CNN_BENCHMARKS_TEST_FAKE_BUSY=1: every run);
it records the CPUs it may run on; the test-only injected slowdown's variable
(tf_cnn_benchmarks/test_hooks/injected_slowdown.py) lengthens every step by its
fraction and is recorded, as in a real run.
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

from tests.results.record_factory import make_record, write_record  # noqa: E402
from tf_cnn_benchmarks.test_hooks import injected_slowdown  # noqa: E402


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--model', default='trivial')
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--num_batches', type=int, default=10)
  parser.add_argument('--result_dir', required=True)
  parser.add_argument('--label', default='')
  parser.add_argument('--tf_version', default='2.21.0')
  parser.add_argument('--jitter', type=float, default=0.0)
  parser.add_argument('--stop_at_top_1_accuracy', type=float, default=None)
  args, _ = parser.parse_known_args()
  print('interpreter: %s' % sys.executable)
  print('preloaded: %s' % (os.environ.get('LD_PRELOAD') or 'nothing'))
  fail_once = os.environ.get('TF_CNN_BENCHMARKS_TEST_FAKE_FAIL_ONCE')
  if fail_once and not os.path.exists(fail_once):
    open(fail_once, 'w').close()
    print('Run failed: simulated one-off crash', file=sys.stderr)
    return 3
  if args.model == 'fail':
    print('Run failed: simulated crash', file=sys.stderr)
    return 3
  if args.model == 'norecord':
    return 0
  if args.model == 'sleep':
    time.sleep(60)
    return 0
  status = {'failed_record': 'failed',
            'short_of_target': 'target_not_reached'}.get(args.model, 'ok')
  slowdown = injected_slowdown.from_environment() or 0.0
  step_time = (0.01 * (1 + random.uniform(-args.jitter, args.jitter))
               * (1 + slowdown))
  record = make_record(model=args.model, label=args.label,
                       tf_version=args.tf_version, status=status,
                       batch_size_per_device=args.batch_size,
                       step_times=[step_time] * args.num_batches,
                       num_batches=args.num_batches)
  if args.stop_at_top_1_accuracy is not None:
    # A convergence run: ~6 epochs to the target, as many more as the
    # injected slowdown makes its steps longer (a stand-in for a release
    # that needs more epochs).
    epochs = 6.0 * (1 + slowdown) * (
        1 + random.uniform(-args.jitter, args.jitter))
    record['summary'].update(target_top_1_accuracy=args.stop_at_top_1_accuracy,
                             epochs_to_target=epochs,
                             time_to_target_sec=epochs * 10.0)
  record['environment']['executable'] = sys.executable
  record['environment']['cpu_affinity'] = sorted(os.sched_getaffinity(0))
  busy_once = os.environ.get('TF_CNN_BENCHMARKS_TEST_FAKE_BUSY_ONCE')
  if busy_once and not os.path.exists(busy_once):
    open(busy_once, 'w').close()
    record['summary']['other_cpu_share'] = 0.5
  if os.environ.get('TF_CNN_BENCHMARKS_TEST_FAKE_BUSY'):
    record['summary']['other_cpu_share'] = 0.5
  record['injected_slowdown'] = slowdown or None
  write_record(args.result_dir, record)
  if status == 'target_not_reached':
    return 5
  if status != 'ok':
    return 1
  print('total images/sec: %.2f' % (args.batch_size / step_time))
  return 0


if __name__ == '__main__':
  sys.exit(main())
