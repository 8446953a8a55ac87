"""`tf_cnn_benchmarks suite`: run configurations repeatedly, one process each.

  tf_cnn_benchmarks suite SUITE.toml --result_dir DIR [--repeat N] [--label L]
  tf_cnn_benchmarks suite SUITE.toml --result_dir DIR -- --num_batches=5
      (flags after `--` are added to every configuration of the file)
  tf_cnn_benchmarks suite --result_dir DIR --repeat 5 -- --model=trivial ...
      (no file: one ad-hoc configuration from the flags after `--`)

Other options: --timeout SECONDS per run, --dry_run (print the commands),
--python / --benchmark_script (which interpreter and entry script run the
benchmark; default this interpreter and the checkout's tf_cnn_benchmarks.py).
The suite file format is in results/suite_file.py.

Exit code: 0 every run succeeded, 1 some run failed (all others still ran),
2 bad input, 130 interrupted.
"""

import argparse
import os
import shlex
import sys

from results import quiet_runs
from results import runner
from results import suite_file
from results.errors import UsageError, report_usage_error

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_INTERRUPTED = 130
DEFAULT_RESULT_DIR = os.path.join('results', 'runs')


def split_benchmark_flags(argv):
  """argv -> (our arguments, benchmark flags after the first `--`)."""
  if '--' in argv:
    cut = argv.index('--')
    return argv[:cut], argv[cut + 1:]
  return argv, []


def add_run_options(parser, label=True):
  """Options shared with the matrix and bisect commands (bisect labels runs
  by version itself: label=False)."""
  parser.add_argument('--result_dir', default=DEFAULT_RESULT_DIR,
                      help='where runs write their records (default %(default)s)')
  parser.add_argument('--repeat', type=int,
                      help='runs per configuration (overrides the file)')
  if label:
    parser.add_argument('--label',
                        help='--label for every run (overrides the file)')
  parser.add_argument('--timeout', type=float,
                      help='stop a run after this many seconds')
  parser.add_argument('--dry_run', action='store_true',
                      help='print the commands instead of running them')
  parser.add_argument('--benchmark_script', default=runner.DEFAULT_BENCHMARK_SCRIPT,
                      help='entry script of the benchmark (default %(default)s)')
  add_noise_options(parser)


def add_noise_options(parser):
  """Less noise (results/quiet_runs.py); also what the detection-power
  study runs with, so it measures the runs these commands make."""
  parser.add_argument('--cpus', type=_cpus,
                      help='pin every run to these CPUs, e.g. 0-1 or 0,2 '
                      '(default: the CPUs this command may use)')
  parser.add_argument('--target_seconds', type=float,
                      help='calibrate each configuration\'s --num_batches '
                      'to this many seconds of timed steps (unless its '
                      'flags set --num_batches)')
  parser.add_argument('--max_other_cpu_share', type=float,
                      default=quiet_runs.DEFAULT_MAX_OTHER_CPU_SHARE,
                      help='a run whose timed loop shared more of the CPU '
                      'with other processes is run again (default '
                      '%(default)s)')
  parser.add_argument('--max_reruns', type=int,
                      default=quiet_runs.DEFAULT_MAX_RERUNS,
                      help='at most this many times (default %(default)s)')


def _cpus(text):
  try:
    return quiet_runs.parse_cpus(text)
  except ValueError:
    raise argparse.ArgumentTypeError(
        '%r is not a CPU list; write CPU numbers and ranges such as 0-1 or '
        '0,2' % text) from None


def noise_control(args):
  """The low-noise settings the run options ask for."""
  return quiet_runs.NoiseControl(args.cpus, args.target_seconds,
                                 args.max_other_cpu_share, args.max_reruns)


def build_parser(prog):
  parser = argparse.ArgumentParser(
      prog=prog, description='Run benchmark configurations repeatedly, each '
      'run in a fresh process, and collect their records.')
  parser.add_argument('suite', nargs='?', help='TOML suite file')
  add_run_options(parser)
  parser.add_argument('--python', default=sys.executable,
                      help='interpreter that runs the benchmark')
  return parser


def check_run_options(args):
  if args.repeat is not None and args.repeat < 1:
    raise UsageError('--repeat must be at least 1, got %d.' % args.repeat)
  if args.timeout is not None and args.timeout <= 0:
    raise UsageError('--timeout is in seconds and must be positive.')
  check_noise_options(args)
  if not os.path.isfile(args.benchmark_script):
    raise UsageError(
        'benchmark script %r does not exist. Run from a checkout of this '
        'repository or pass --benchmark_script.' % args.benchmark_script)


def check_noise_options(args):
  if args.target_seconds is not None and args.target_seconds <= 0:
    raise UsageError('--target_seconds is the timed loop\'s length in '
                     'seconds and must be positive.')
  if not 0 <= args.max_other_cpu_share <= 1:
    raise UsageError('--max_other_cpu_share is a share of the machine: '
                     'between 0 and 1.')
  if args.max_reruns < 0:
    raise UsageError('--max_reruns must be 0 or more.')
  if args.cpus and not set(args.cpus) <= set(os.sched_getaffinity(0)):
    raise UsageError(
        '--cpus %s: this command may run on CPUs %s only; pick from those.'
        % (','.join(map(str, args.cpus)),
           ','.join(map(str, sorted(os.sched_getaffinity(0))))))


def load_configs(suite_path, benchmark_flags, repeat):
  """Configurations from a suite file (plus extra flags) or the ad-hoc flags."""
  if suite_path:
    configs = suite_file.load_suite(suite_path)
    if benchmark_flags:
      extra = suite_file.adhoc_config(benchmark_flags, 1).flag_args
      for config in configs:
        config.flag_args = config.flag_args + extra
    return configs
  if not benchmark_flags:
    raise UsageError(
        'nothing to run: give a suite file (tf_cnn_benchmarks suite '
        'SUITE.toml --result_dir DIR) or benchmark flags after `--` '
        '(tf_cnn_benchmarks suite --repeat 3 -- --model=trivial).')
  return [suite_file.adhoc_config(benchmark_flags, repeat or 1)]


def run_plan(runs, args, python, stream=None):
  """Runs (or with --dry_run prints) the planned runs; returns the exit code."""
  stream = stream or sys.stdout
  if args.dry_run:
    for run in runs:
      command = runner.build_command(run, python, args.benchmark_script,
                                     args.result_dir)
      print(shlex.join(command), file=stream)
    return EXIT_OK
  try:
    outcomes = runner.run_all(runs, args.result_dir, python=python,
                              benchmark_script=args.benchmark_script,
                              timeout=args.timeout, stream=stream,
                              noise=noise_control(args))
  except KeyboardInterrupt:
    print('interrupted', file=stream)
    return EXIT_INTERRUPTED
  print(runner.failure_report(outcomes), file=stream)
  return EXIT_OK if all(o.ok for o in outcomes) else EXIT_RUN_FAILED


def main(argv=None):
  argv = list(sys.argv if argv is None else argv)
  own_args, benchmark_flags = split_benchmark_flags(argv[1:])
  try:
    args = build_parser(argv[0]).parse_args(own_args)
  except SystemExit as exit_request:
    return exit_request.code
  try:
    check_run_options(args)
    configs = load_configs(args.suite, benchmark_flags, args.repeat)
  except UsageError as error:
    return report_usage_error(error)
  runs = runner.plan_runs(configs, args.repeat, args.label)
  print('suite: %d configuration(s), %d run(s), records to %s'
        % (len(configs), len(runs), os.path.abspath(args.result_dir)), flush=True)
  return run_plan(runs, args, args.python)


if __name__ == '__main__':
  sys.exit(main())
