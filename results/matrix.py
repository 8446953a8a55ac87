"""`tf_cnn_benchmarks matrix`: the same suite under several TF versions.

  tf_cnn_benchmarks matrix --tf_versions 2.19.1,2.20.0,2.21.0 \
      --suite SUITE.toml --result_dir DIR [--venv_dir DIR] [--repeat N] \
      [--label L] [--timeout S] [--dry_run] [-- extra benchmark flags]
  tf_cnn_benchmarks matrix --tf_versions current,2.20.0 --result_dir DIR \
      --repeat 5 -- --model=trivial --num_batches=50     (no suite file)

Each version runs in its cached venv (results/venvs.py; built on first use);
`current` or the version installed here runs with this interpreter. Every run
gets --label tf-<version> unless --label is given, and its record carries
environment.tf_version as well. The versions take turns run by run (2.20.0,
2.21.0, 2.20.0, ...), so a machine that gets busier or cooler during the
matrix colours every version alike. Compare afterwards with
`tf_cnn_benchmarks compare --result_dir DIR --baseline 2.20.0 --candidate 2.21.0`.

Exit code: 0 all runs of all versions succeeded, 1 a run failed or a venv
could not be built (the other versions still run), 2 bad input.
"""

import argparse
import sys

from results import runner
from results import suite
from results import venvs
from results.errors import UsageError, report_usage_error

EXIT_OK = 0
EXIT_FAILED = 1


def build_parser(prog):
  parser = argparse.ArgumentParser(
      prog=prog, description='Run a suite under several TensorFlow versions, '
      'each in its own cached virtual environment.')
  parser.add_argument('--tf_versions', required=True,
                      help='comma-separated, e.g. 2.19.1,2.20.0,current')
  parser.add_argument('--suite', help='TOML suite file (or flags after --)')
  parser.add_argument('--venv_dir', default=venvs.DEFAULT_VENV_ROOT,
                      help='where the venvs are cached (default %(default)s)')
  suite.add_run_options(parser)
  return parser


def version_label(version, user_label):
  if user_label is not None:
    return user_label
  return 'tf-%s' % venvs.resolved_version(version)


def version_python(version, args, stream):
  """Builds or reuses the version's interpreter (venvs.VenvError if not)."""
  if args.dry_run and not venvs.uses_current_interpreter(version):
    return venvs.venv_python(venvs.venv_path(args.venv_dir, version))
  return venvs.python_for(version, args.venv_dir, stream)


def main(argv=None, stream=None):
  argv = list(sys.argv if argv is None else argv)
  stream = stream or sys.stdout
  own_args, benchmark_flags = suite.split_benchmark_flags(argv[1:])
  try:
    args = build_parser(argv[0]).parse_args(own_args)
  except SystemExit as exit_request:
    return exit_request.code
  try:
    versions = venvs.parse_versions(args.tf_versions)
    test_envs = {v: venvs.test_environment(v) for v in versions}
    suite.check_run_options(args)
    configs = suite.load_configs(args.suite, benchmark_flags, args.repeat)
  except UsageError as error:
    return report_usage_error(error)
  problems, plans = [], []
  for version in versions:
    try:
      python = version_python(version, args, stream)
    except venvs.VenvError as error:
      print('tf %s: %s' % (version, error), file=stream, flush=True)
      problems.append('%s: venv not built' % version)
      continue
    plan = runner.plan_runs(configs, args.repeat,
                            version_label(version, args.label), python,
                            test_envs[version])
    print('== TensorFlow %s: %d run(s) with %s' % (
        venvs.resolved_version(version), len(plan), python), file=stream,
          flush=True)
    plans.append(plan)
  # Every version's runs, taken in turn (see runner.interleave).
  code = suite.run_plan(runner.interleave(plans), args, sys.executable, stream)
  if code == suite.EXIT_INTERRUPTED:
    return code
  if code != suite.EXIT_OK:
    problems.append('some runs failed')
  print('matrix: %d version(s), %s' % (
      len(versions), '; '.join(problems) if problems else 'all runs succeeded'),
        file=stream, flush=True)
  return EXIT_FAILED if problems else EXIT_OK


if __name__ == '__main__':
  sys.exit(main())
