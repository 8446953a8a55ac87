"""`tf_cnn_benchmarks dashboard`: a static HTML page of the results.

  tf_cnn_benchmarks dashboard --result_dir DIR [--result_dir DIR2] \
      --output OUT [--baseline B --candidate C [--by tf_version|label|dir]] \
      [--reference VERSION] [--metric M] [--max_step_charts 8]

Writes OUT/index.html with each chart beside it as PNG and SVG (one folder,
no server, nothing fetched: open the file, or copy the folder). Everything
is grouped by what is compared (--by: TF version, label, engine, commit or
folder; auto: the first of these that varies among the runs). The first
chart answers the page's question (results/charts/), --baseline and
--candidate first when given:
* three or more TF versions (a `matrix` or `bisect` folder): the version
  matrix, each configuration's change against --reference (default the
  oldest), verdicts Holm-adjusted over the whole matrix;
* runs that evaluated during training: accuracy against time, the target
  line, and each group's time to target;
* two groups (--baseline/--candidate, or the two newest TF versions, or the
  only two groups): the change per configuration with its 95% interval and
  verdict (a forest plot of `compare --metric M`), then compare's table
  with each note once below it.
Then throughput per configuration and group (median bar, IQR whiskers and
every run as a dot), scaling with towers and workers (when runs vary them),
peak memory, a table of the runs, the step times of every run of each
configuration; and history.html (results/history/page.py), linked from it:
each configuration's runs in --history_order with the steps found in them.
Each chart has a one-line caption saying what it answers. Folders are named
by their base name only. Every file is written atomically, index.html last.

Exit code: 0 written, 2 bad input.
"""

import argparse
import datetime
import html
import os
import sys

import numpy as np
import pandas as pd

from results import compare
from results import comparison as comparison_lib
from results import plots
from results import stats
from results import store
from results import tables
from results.charts import change as change_chart
from results.charts import convergence as convergence_chart
from results.charts import versions as versions_chart
from basics.atomic_files import write_bytes_atomically, write_text_atomically
from results.errors import UsageError, report_usage_error
from results.history import ordering as history_ordering
from results.history import page as history_page

# Sets <body data-images-status="ok"> once every image decoded, or
# "broken:N"; a headless browser (and the tests) read it from the DOM.
IMAGE_CHECK_SCRIPT = """
<script>
window.addEventListener('load', function () {
  var images = Array.prototype.slice.call(document.images);
  var broken = images.filter(function (image) {
    return !(image.complete && image.naturalWidth > 0);
  });
  document.body.setAttribute('data-images-total', String(images.length));
  document.body.setAttribute('data-images-status',
      broken.length ? 'broken:' + broken.length : 'ok');
});
</script>
"""

PAGE_CSS = tables.TABLE_CSS + """
body { font: 14px sans-serif; margin: 1.5em; color: #222; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
figure { margin: 0.5em 0 1.5em; }
figcaption { color: #444; max-width: 60em; }
ol.notes { color: #555; font-size: 13px; max-width: 70em; }
table.runs { border-collapse: collapse; font: 13px sans-serif; }
table.runs th, table.runs td { border: 1px solid #ccc; padding: 3px 6px; }
.note { color: #666; }
"""


def build_parser(prog):
  parser = argparse.ArgumentParser(
      prog=prog, description='Write a static HTML dashboard of benchmark runs.')
  parser.add_argument('--result_dir', action='append', default=[],
                      help='folder of run records (repeatable)')
  parser.add_argument('--output', required=True,
                      help='folder for index.html and the charts')
  parser.add_argument('--baseline', help='baseline group of the regression table')
  parser.add_argument('--candidate', help='candidate group of the table')
  parser.add_argument('--by', default='auto',
                      choices=['auto'] + sorted(comparison_lib.GROUP_COLUMNS))
  parser.add_argument('--reference',
                      help='the TensorFlow version the version matrix '
                      'compares every other with (default: the oldest)')
  compare.add_test_options(parser)
  parser.add_argument('--max_step_charts', type=int, default=8,
                      help='step-time charts (every run of a configuration '
                      'in one) for at most this many configurations')
  parser.add_argument('--history_order', choices=history_ordering.ORDERS,
                      default='time', help='how history.html orders the runs')
  return parser


def choose_groups(frame, runs, args):
  """(group_by, (baseline, candidate) or None): what the page groups by, and
  the pair of the regression table if there is one to show."""
  if args.baseline or args.candidate:
    if not (args.baseline and args.candidate):
      raise UsageError('give both --baseline and --candidate for the '
                       'regression table, or neither (then the two newest TF '
                       'versions are compared).')
    group_by = args.by
    if group_by == 'auto':
      group_by = comparison_lib.guess_group_by(frame, args.baseline,
                                               args.candidate)
    return group_by, (args.baseline, args.candidate)
  group_by = args.by
  if group_by == 'auto':
    group_by = (comparison_lib.varying_groupings(runs) or ['tf_version'])[0]
  values = comparison_lib.available_values(runs, group_by)
  if group_by == 'tf_version' and len(values) >= 2:
    return group_by, (values[-2], values[-1])
  if len(values) == 2:
    return group_by, (values[0], values[1])
  return group_by, None


# Above this many runs in a cell the table gives the range, not each run.
MAX_LISTED_RUNS = 12


def _runs_table(runs, frame, group_by):
  """Every configuration x group: runs, median, spread and each run's
  images/sec."""
  cells = {}
  for run in runs:
    key = (comparison_lib.config_key(run),
           comparison_lib.group_value(run, group_by))
    cells.setdefault(key, []).append(run[plots.IPS])
  keys = sorted({k for k, _ in cells}, key=comparison_lib.sortable_key)
  fields = comparison_lib.varying_fields(keys)
  head = [comparison_lib.SHORT_NAMES.get(f, f) for f in fields] + [
      comparison_lib.GROUP_TITLES[group_by], 'runs', 'median img/s', 'min',
      'max', 'each run (img/s, in time order)']
  rows = []
  order = (comparison_lib.version_sort_key if group_by == 'tf_version'
           else str)
  for (key, group), values in sorted(
      cells.items(), key=lambda kv: (comparison_lib.sortable_key(kv[0][0]),
                                     order(kv[0][1]))):
    named = comparison_lib.key_values(key)
    each = (', '.join('%.1f' % v for v in values)
            if len(values) <= MAX_LISTED_RUNS else '(%d runs)' % len(values))
    rows.append([str(named[f]) for f in fields] + [
        comparison_lib.group_display(group_by, group),
        str(len(values)), '%.1f' % np.median(values), '%.1f' % min(values),
        '%.1f' % max(values), each])
  out = [pd.DataFrame(rows, columns=head).to_html(
      index=False, classes='runs', border=0, justify='left')]
  # A run short of its accuracy target trained and measured: it is listed.
  failed = frame[~frame['status'].isin(['ok', 'target_not_reached'])]
  if len(failed):
    out.append('<p class="note">%d run(s) did not succeed and are left out '
               '(their images/sec is missing, not 0): %s</p>' % (
                   len(failed), html.escape(', '.join(
                       '%s (%s)' % (os.path.basename(p), s)
                       for p, s in zip(failed['path'], failed['status'])))))
  return '\n'.join(out)


def _runs_per_config(runs, limit):
  """[(config key, its runs)] in configuration order, at most limit."""
  by_key = {}
  for run in runs:
    by_key.setdefault(comparison_lib.config_key(run), []).append(run)
  ordered = sorted(by_key.items(),
                   key=lambda kv: comparison_lib.sortable_key(kv[0]))
  return ordered[:limit]


def _figure_html(name, alt, caption):
  """A chart: its one-line question, the PNG, and the SVG beside it."""
  return ('<figure><figcaption>%s <a href="%s.svg">SVG</a></figcaption>'
          '<img src="%s.png" alt="%s"></figure>' % (
              html.escape(caption), html.escape(name), html.escape(name),
              html.escape(alt)))


def _folder_names(frame):
  """The result folders by base name: a page names no path of the machine
  that measured."""
  return sorted({comparison_lib.group_display('dir', str(d))
                 for d in frame['source_dir']})


class _Page:
  """The sections of index.html, and the chart files written beside it."""

  def __init__(self, output):
    self.output = output
    self.sections = []

  def add(self, text):
    self.sections.append(text)

  def chart(self, name, figure, alt, caption, missing):
    """Writes name.png and name.svg and shows the PNG, or says ``missing``
    when ``figure`` is None."""
    if figure is None:
      self.add('<p class="note">%s</p>' % html.escape(missing))
      return
    write_bytes_atomically(os.path.join(self.output, name + '.png'),
                           plots.figure_png(figure))
    write_bytes_atomically(os.path.join(self.output, name + '.svg'),
                           plots.figure_svg(figure))
    self.add(_figure_html(name, alt, caption))


def _version_matrix_section(page, frame, runs, args):
  """The heatmap, when the runs span MIN_VERSIONS TensorFlow versions."""
  versions = comparison_lib.available_values(runs, 'tf_version')
  if len(versions) < versions_chart.MIN_VERSIONS:
    return
  if args.reference and comparison_lib.normalise_group_value(
      'tf_version', args.reference) not in versions:
    raise UsageError('--reference %s has no successful runs; the versions '
                     'with runs are %s.' % (args.reference,
                                            ', '.join(versions)))
  matrix = versions_chart.VersionMatrix(frame, args.reference, args.alpha,
                                        args.min_effect)
  page.add('<h2>TensorFlow versions against %s</h2>' % html.escape(
      matrix.reference))
  found = matrix.first_slower()
  steps = matrix.steps()
  page.add('<p class="finding">%s%s</p>' % (
      html.escape('First release called slower than %s: %s.' % (
          matrix.reference, found) if found else
                  'No release is called slower than %s.' % matrix.reference),
      html.escape(' Steps, in the order their runs were taken: %s.' % '; '.join(
          '%d. %s' % (number, ', '.join(versions))
          for number, versions in enumerate(steps, 1))) if steps else ''))
  page.chart('versions', versions_chart.heatmap(matrix),
             'change per configuration and TensorFlow version',
             versions_chart.CAPTION % ('TF ' + matrix.reference), '')


def _convergence_section(page, frame, group_by):
  """Accuracy against time, when some run evaluated during training."""
  figure = convergence_chart.accuracy(frame, group_by)
  if figure is None:
    return
  page.add('<h2>Time to accuracy</h2>')
  page.chart('accuracy', figure, 'top-1 accuracy against time, every run',
             convergence_chart.ACCURACY_CAPTION, '')


def _change_section(page, frame, runs, group_by, pair, args):
  page.add('<h2>The change</h2>')
  if not pair:
    page.add(
        '<p class="note">Grouped by %s: %s. The change needs two groups; '
        'pass --baseline and --candidate (and --by).</p>' % (
            html.escape(comparison_lib.GROUP_TITLES[group_by]),
            html.escape(', '.join(comparison_lib.available_values(
                runs, group_by)) or 'none')))
    return
  # Runs slowed on purpose are shown, never refused: each row's note says
  # which side had them.
  result = comparison_lib.compare_groups(
      frame, group_by, *pair, alpha=args.alpha,
      min_effect_pct=args.min_effect, allow_injected=True,
      metric=args.metric, drop_extremes=args.drop_extremes)
  page.chart('change', change_chart.forest(result),
             'change per configuration with its 95% interval',
             change_chart.CAPTION, 'No configuration has runs on both sides '
             'to estimate a change from.')
  page.add(tables.render_html_fragment(result))


def render(frame, args, output):
  """Writes the charts, then index.html; returns the page's path. The first
  chart answers the page's question: the change between --baseline and
  --candidate when they are given, else the version matrix for three or
  more TensorFlow versions, else time to accuracy for convergence runs,
  else the change between the two groups."""
  runs = comparison_lib.usable_runs(frame)
  group_by, pair = choose_groups(frame, runs, args)
  group_name = comparison_lib.GROUP_TITLES[group_by]
  page = _Page(output)
  # A pair asked for by name is the page's question; else a matrix of
  # versions is, then convergence.
  if args.baseline:
    _change_section(page, frame, runs, group_by, pair, args)
  if group_by == 'tf_version' or args.reference:
    _version_matrix_section(page, frame, runs, args)
  _convergence_section(page, frame, group_by)
  if not args.baseline:
    _change_section(page, frame, runs, group_by, pair, args)
  page.add('<h2>Throughput by %s</h2>' % html.escape(group_name))
  page.chart('throughput', plots.throughput_by_group(runs, group_by),
             'images/sec per configuration and %s, every run a dot'
             % group_name, 'How fast is each configuration? Bars: median '
             'images/sec, whiskers: interquartile range, dots: runs.',
             'No successful runs to plot.')
  page.add('<h2>Scaling</h2>')
  page.chart('scaling', plots.scaling(runs, group_by), 'images/sec against '
             'towers and workers', 'Does it scale? Median images/sec against '
             'towers and workers.', 'No configuration was run with more than '
             'one tower count or worker count, so there is no scaling chart.')
  page.add('<h2>Memory</h2>')
  page.chart('memory', convergence_chart.memory(frame, group_by),
             'peak resident memory per configuration',
             convergence_chart.MEMORY_CAPTION,
             'No run recorded its peak memory (records before it was added).')
  page.add('<h2>Runs</h2>')
  page.add(_runs_table(runs, frame, group_by))
  page.add('<h2>Step times of every run, per configuration</h2>')
  labels = plots.config_labels(runs)
  for index, (key, members) in enumerate(
      _runs_per_config(runs, args.max_step_charts), 1):
    title = '%s: %d run(s) by %s' % (labels[key], len(members), group_name)
    page.chart('steps_%d' % index,
               plots.step_times(members, group_by, title),
               'step times: ' + title, 'Is any run uneven? Every timed step '
               'of %s, a line per run, the group medians dashed.' % title,
               'No run of %s has step times.' % title)
  history_name = history_page.write(frame, output, args.history_order,
                                    PAGE_CSS, IMAGE_CHECK_SCRIPT)
  generated = datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%d %H:%M UTC')
  html_page = '\n'.join([
      '<!DOCTYPE html>', '<html><head><meta charset="utf-8">',
      '<meta name="viewport" content="width=device-width, initial-scale=1">',
      '<title>tf_cnn_benchmarks results</title>',
      '<style>%s</style>' % PAGE_CSS, '</head><body>',
      '<h1>tf_cnn_benchmarks results</h1>',
      '<p>%d successful run(s) of %d record(s) from %s; TF versions: %s; '
      'grouped by %s. Generated %s.</p>' % (
          len(runs), len(frame), html.escape(', '.join(_folder_names(frame))),
          html.escape(', '.join(plots.tf_versions(runs)) or 'none'),
          html.escape(group_name), generated),
      '<p><a href="%s">History and change points</a> (runs in %s order, '
      'the steps found in them)</p>' % (history_name, args.history_order),
  ] + page.sections + [IMAGE_CHECK_SCRIPT, '</body></html>', ''])
  index_path = os.path.join(output, 'index.html')
  write_text_atomically(index_path, html_page)
  return index_path


def main(argv=None):
  argv = list(sys.argv if argv is None else argv)
  try:
    args = build_parser(argv[0]).parse_args(argv[1:])
  except SystemExit as exit_request:
    return exit_request.code
  try:
    if not args.result_dir:
      raise UsageError('no result folder given: add --result_dir FOLDER (the '
                       'folder the benchmark runs wrote to).')
    if args.max_step_charts < 0:
      raise UsageError('--max_step_charts must be 0 or more.')
    compare.check_test_options(args)
    frame = store.require_runs(store.load_runs(args.result_dir),
                               args.result_dir)
    index_path = render(frame, args, args.output)
  except UsageError as error:
    return report_usage_error(error)
  print('wrote %s' % os.path.abspath(index_path))
  return 0


if __name__ == '__main__':
  sys.exit(main())
