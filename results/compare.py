"""`tf_cnn_benchmarks compare`: is the candidate slower than the baseline?

  # two result folders
  tf_cnn_benchmarks compare results/old results/new
  # two TF versions (or labels) among the records of some folders
  tf_cnn_benchmarks compare --result_dir results/runs \
      --baseline 2.20.0 --candidate 2.21.0 [--by tf_version]
  # options: --alpha 0.05 --min_effect 2 --format markdown|html|json
  #          --output FILE
  #          --metric images_per_sec|cpu_seconds_per_image|peak_rss_mb|
  #                   epochs_to_target|time_to_target_sec (all but the
  #                   first: a rise regresses) [--drop_extremes]
  #          --allow_injected_slowdown (runs slowed on purpose, test-only)

Exit code (for CI gating): 0 no regression, 1 at least one regression after
Holm's adjustment across the configurations compared (a configuration with
one run on a side gets no verdict and never sets it), 2 bad input. The
statistics are described in results/stats.py and results/comparison.py.
"""

import argparse
import os
import sys

from results import comparison as comparison_lib
from results import stats
from results import store
from results import tables
from basics.atomic_files import write_text_atomically
from results.errors import UsageError, report_usage_error

EXIT_NO_REGRESSION = 0
EXIT_REGRESSION = 1

RENDERERS = {'markdown': tables.render_markdown,
             'html': tables.render_html_document,
             'json': tables.render_json}
# --output's extension -> format, when --format is not given.
EXTENSION_FORMATS = {'.html': 'html', '.htm': 'html', '.json': 'json'}


def add_test_options(parser):
  """--alpha, --min_effect, what is compared and how: the test's settings
  (also bisect's)."""
  parser.add_argument('--alpha', type=float, default=stats.DEFAULT_ALPHA,
                      help='significance level of the two-sided test')
  parser.add_argument('--min_effect', type=float,
                      default=stats.DEFAULT_MIN_EFFECT_PCT,
                      help='smallest change in %% that counts as a regression')
  parser.add_argument('--metric', default=comparison_lib.THROUGHPUT,
                      choices=sorted(comparison_lib.METRICS),
                      help='what to compare per run: images_per_sec (the '
                      'default; a drop regresses), cpu_seconds_per_image '
                      '(the process\'s own CPU time per image, blind to '
                      'other processes), peak_rss_mb (the peak host '
                      'memory), or for --stop_at_top_1_accuracy runs '
                      'epochs_to_target / time_to_target_sec (for all but '
                      'images_per_sec a rise regresses)')
  parser.add_argument('--drop_extremes', action='store_true',
                      help='leave out each side\'s best and worst run before '
                      'the test, as MLPerf scores time to train (sides of '
                      '3 runs or more)')


def check_test_options(args):
  if not 0 < args.alpha < 1:
    raise UsageError('--alpha must be between 0 and 1, got %g.' % args.alpha)
  if args.min_effect < 0:
    raise UsageError('--min_effect is a percentage >= 0, got %g.'
                     % args.min_effect)


def build_parser(prog):
  parser = argparse.ArgumentParser(
      prog=prog,
      description='Compare benchmark throughput of two groups of runs, per '
      'configuration, and flag regressions.')
  parser.add_argument(
      'folders', nargs='*',
      help='result folders; exactly two without --baseline/--candidate '
      'compares the first (baseline) with the second (candidate)')
  parser.add_argument('--result_dir', action='append', default=[],
                      help='a folder of run records (repeatable)')
  parser.add_argument('--by', default='auto',
                      choices=['auto'] + sorted(comparison_lib.GROUP_COLUMNS),
                      help='what --baseline/--candidate name (auto: the label '
                      'or TF version that matches)')
  parser.add_argument('--baseline', help='baseline group value')
  parser.add_argument('--candidate', help='candidate group value')
  add_test_options(parser)
  parser.add_argument('--allow_injected_slowdown', action='store_true',
                      help='compare runs slowed on purpose by the test-only '
                      'injected slowdown too (refused otherwise)')
  parser.add_argument('--format', choices=sorted(RENDERERS),
                      help='default: from --output extension, else markdown')
  parser.add_argument('--output', help='write the table here (atomically) '
                      'instead of standard output')
  return parser


def comparison_from_args(args):
  """Loads the records and compares the groups the arguments name."""
  check_test_options(args)
  paths = list(args.folders) + list(args.result_dir)
  named = args.baseline is not None or args.candidate is not None
  if named and (args.baseline is None or args.candidate is None):
    raise UsageError('give both --baseline and --candidate (the two groups to '
                     'compare), or neither and two result folders.')
  if not named:
    if len(paths) != 2:
      raise UsageError(
          'nothing to compare: pass two result folders (baseline first), or '
          '--result_dir FOLDER with --baseline and --candidate naming two TF '
          'versions or labels found in its records.')
    group_by, baseline, candidate = 'dir', paths[0], paths[1]
  else:
    if not paths:
      raise UsageError('no result folder given: add --result_dir FOLDER (the '
                       'folder the benchmark runs wrote to).')
    group_by, baseline, candidate = args.by, args.baseline, args.candidate
  frame = store.require_runs(store.load_runs(paths), paths)
  if group_by == 'auto':
    group_by = comparison_lib.guess_group_by(frame, baseline, candidate)
  return comparison_lib.compare_groups(
      frame, group_by, baseline, candidate, args.alpha, args.min_effect,
      allow_injected=args.allow_injected_slowdown, metric=args.metric,
      drop_extremes=args.drop_extremes)


def render(comparison, output_format):
  return RENDERERS[output_format](comparison)


def main(argv=None):
  argv = list(sys.argv if argv is None else argv)
  parser = build_parser(argv[0])
  try:
    args = parser.parse_args(argv[1:])
  except SystemExit as exit_request:  # --help (0) or argparse's usage error (2)
    return exit_request.code
  try:
    comparison = comparison_from_args(args)
  except UsageError as error:
    return report_usage_error(error)
  output_format = args.format or EXTENSION_FORMATS.get(
      os.path.splitext(args.output or '')[1].lower(), 'markdown')
  text = render(comparison, output_format)
  if args.output:
    write_text_atomically(args.output, text)
    print('wrote %s (%s)' % (os.path.abspath(args.output),
                            tables.tally(comparison)))
  else:
    sys.stdout.write(text)
  return EXIT_REGRESSION if comparison.has_regression else EXIT_NO_REGRESSION


if __name__ == '__main__':
  sys.exit(main())
