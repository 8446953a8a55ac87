"""`tf_cnn_benchmarks history`: when did a configuration get slower (or faster)?

  tf_cnn_benchmarks history --result_dir DIR [--result_dir DIR2] \
      [--order time|commit|tf_version] [--min_step 2] [--alpha 0.05]

Per configuration, its runs in order (ordering.py) and the steps found in
them (change_points.py): where each happened (TF versions, commit range) and
its size with an interval.

Exit code: 0 no step down, 1 at least one confirmed step down (a slowdown
somewhere in the history, confirmed after Holm's adjustment over every step
of the history; for CI gating as `compare`), 2 bad input.
"""

import argparse
import sys

import numpy as np

from results import comparison as comparison_lib
from results import stats
from results import store
from results.errors import UsageError, report_usage_error
from results.history import analysis
from results.history import change_points
from results.history import ordering

EXIT_NO_STEP_DOWN = 0
EXIT_STEP_DOWN = 1


def build_parser(prog):
  parser = argparse.ArgumentParser(
      prog=prog, description="Find the steps in each configuration's "
      'throughput over a history of runs.')
  parser.add_argument('--result_dir', action='append', default=[],
                      help='a folder of run records (repeatable)')
  parser.add_argument('--order', choices=ordering.ORDERS, default='time',
                      help='order runs by start time, harness commit (its '
                      'commit date) or TF version (default: time)')
  parser.add_argument('--min_step', type=float,
                      default=change_points.MIN_STEP_PCT,
                      help='smallest step in %% that is reported (default: '
                      '%(default)g)')
  parser.add_argument('--alpha', type=float, default=stats.DEFAULT_ALPHA,
                      help='significance level of the test of each step')
  parser.add_argument('--metric', default=comparison_lib.THROUGHPUT,
                      choices=sorted(comparison_lib.METRICS),
                      help='what to follow per run (default images_per_sec, '
                      'where a step down is the regression; for the others, '
                      'e.g. epochs_to_target, a step up is)')
  return parser


def history_from_args(args):
  if not args.result_dir:
    raise UsageError('no result folder given: add --result_dir FOLDER (the '
                     'folder the benchmark runs wrote to).')
  if not 0 < args.alpha < 1:
    raise UsageError('--alpha must be between 0 and 1, got %g.' % args.alpha)
  if args.min_step < 0:
    raise UsageError('--min_step is a percentage >= 0, got %g.'
                     % args.min_step)
  frame = store.require_runs(store.load_runs(args.result_dir), args.result_dir)
  return analysis.analyse(frame, args.order, args.alpha, args.min_step,
                          args.metric)


def _interval(result):
  if np.isnan(result.change_pct_low):
    return '[n/a]'
  return '[%+.1f%%, %+.1f%%]' % (result.change_pct_low, result.change_pct_high)


def step_line(step, runs, order, unit='img/s'):
  """'down -10.1% [-11.0%, -9.2%]  TF 2.12.1 -> 2.13.1, commit a..b  ...'"""
  result = step.result
  return '  %-11s %+6.1f%% %-18s %s  (median %.1f -> %.1f %s, %d runs ' \
         'before, %d after, p %.2g, Holm %.2g)' % (
             step.kind, result.change_pct, _interval(result),
             ordering.step_place(runs[step.index - 1], runs[step.index], order),
             result.baseline_median, result.candidate_median, unit,
             result.n_baseline, result.n_candidate, result.p_value,
             result.p_adjusted)


def render(history):
  confidence = 100 * (1 - history.alpha)
  lines = ['History of %d configuration(s), runs ordered by %s.' % (
      len(history.histories), history.order),
           'Method: ' + change_points.method_text(history.alpha,
                                                   history.min_step_pct)]
  if history.metric != comparison_lib.THROUGHPUT:
    lines.append('Metric: %s per run; a step %s is the regression.' % (
        history.unit, history.regression_kind))
  if history.left_out:
    lines.append('%d run(s) record no harness commit and are left out.'
                 % history.left_out)
  lines.append('Columns: kind, size (Hodges-Lehmann, after vs before) and its '
               '%g%% interval, where it happened.' % confidence)
  fields = history.shown_fields()
  for one in history.histories:
    series = one.series
    lines.append('')
    lines.append('%s: %d run(s), %s: %s' % (
        ordering.series_title(series, fields), len(series.runs),
        ordering.series_span(series, history.order),
        '%d step(s)' % len(one.steps) if one.steps else 'no step'))
    for step in one.steps:
      lines.append(step_line(step, series.runs, history.order,
                             history.unit))
  down = len(history.steps_of_kind(change_points.STEP_DOWN))
  up = len(history.steps_of_kind(change_points.STEP_UP))
  unconfirmed = len(history.steps_of_kind(change_points.UNCONFIRMED))
  lines.append('')
  lines.append('%d step(s) down, %d up, %d unconfirmed (too few runs either '
               'side to test, or not below alpha after Holm\'s adjustment over '
               'the %d step(s) tested; repeat runs there).' % (
                   down, up, unconfirmed, down + up + unconfirmed))
  return '\n'.join(lines) + '\n'


def main(argv=None):
  argv = list(sys.argv if argv is None else argv)
  try:
    args = build_parser(argv[0]).parse_args(argv[1:])
  except SystemExit as exit_request:  # --help (0) or argparse's usage error (2)
    return exit_request.code
  try:
    history = history_from_args(args)
  except UsageError as error:
    return report_usage_error(error)
  sys.stdout.write(render(history))
  # The regression: a step down in throughput, up in epochs to target.
  return (EXIT_STEP_DOWN if history.steps_of_kind(history.regression_kind)
          else EXIT_NO_STEP_DOWN)


if __name__ == '__main__':
  sys.exit(main())
