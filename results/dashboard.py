"""`tf_cnn_benchmarks dashboard`: a static HTML page of the results.

  tf_cnn_benchmarks dashboard --result_dir DIR [--result_dir DIR2] \
      --output OUT [--baseline B --candidate C [--by tf_version|label|dir]] \
      [--max_step_charts 8]

Writes OUT/index.html and PNG charts next to it (no server; open the file).
Everything is grouped by what is compared (--by: TF version, label, engine,
commit or folder; auto: the first of these that varies among the runs):
throughput per configuration and group (median bar, IQR whiskers and every
run as a dot), scaling with towers and workers (when runs vary them), the
step times of every run of each configuration, a table of the runs, and the
regression table of compare; and history.html (results/history/page.py),
linked from it: each configuration's runs in --history_order with the steps
found in them. Without --baseline/--candidate the two newest TF versions are
compared when grouping by TF version, else the two groups when there are
exactly two. Every file is written atomically, index.html last.

Exit code: 0 written, 2 bad input.
"""

import argparse
import datetime
import html
import os
import sys

import numpy as np
import pandas as pd

from results import comparison as comparison_lib
from results import plots
from results import stats
from results import store
from results import tables
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
  parser.add_argument('--alpha', type=float, default=stats.DEFAULT_ALPHA)
  parser.add_argument('--min_effect', type=float,
                      default=stats.DEFAULT_MIN_EFFECT_PCT)
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
  failed = frame[frame['status'] != 'ok']
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


def _image(name, alt):
  return '<img src="%s" alt="%s">' % (html.escape(name), html.escape(alt))


def render(frame, args, output):
  """Writes the charts, then index.html; returns the page's path."""
  runs = comparison_lib.usable_runs(frame)
  group_by, pair = choose_groups(frame, runs, args)
  group_name = comparison_lib.GROUP_TITLES[group_by]
  sections = []

  def chart(name, png, alt, caption):
    if png is None:
      sections.append('<p class="note">%s</p>' % html.escape(caption))
      return
    write_bytes_atomically(os.path.join(output, name), png)
    sections.append(_image(name, alt))

  sections.append('<h2>Throughput by %s</h2>' % html.escape(group_name))
  chart('throughput.png', plots.throughput_by_group(runs, group_by),
        'images/sec per configuration and %s, every run a dot' % group_name,
        'No successful runs to plot.')
  sections.append('<h2>Scaling</h2>')
  chart('scaling.png', plots.scaling(runs, group_by), 'images/sec against '
        'towers and workers', 'No configuration was run with more than one '
        'tower count or worker count, so there is no scaling chart.')
  sections.append('<h2>Regression check</h2>')
  if pair:
    # Runs slowed on purpose are shown, never refused: each row's note
    # says which side had them.
    result = comparison_lib.compare_groups(frame, group_by, *pair,
                                           alpha=args.alpha,
                                           min_effect_pct=args.min_effect,
                                           allow_injected=True)
    sections.append(tables.render_html_fragment(result))
  else:
    sections.append(
        '<p class="note">Grouped by %s: %s. The regression table needs two '
        'groups; pass --baseline and --candidate (and --by).</p>' % (
            html.escape(group_name), html.escape(', '.join(
                comparison_lib.available_values(runs, group_by)) or 'none')))
  sections.append('<h2>Runs</h2>')
  sections.append(_runs_table(runs, frame, group_by))
  sections.append('<h2>Step times of every run, per configuration</h2>')
  labels = plots.config_labels(runs)
  for index, (key, members) in enumerate(
      _runs_per_config(runs, args.max_step_charts), 1):
    title = '%s: %d run(s) by %s' % (labels[key], len(members), group_name)
    chart('steps_%d.png' % index, plots.step_times(members, group_by, title),
          'step times: ' + title, 'No run of %s has step times.' % title)
  history_name = history_page.write(frame, output, args.history_order,
                                    PAGE_CSS, IMAGE_CHECK_SCRIPT)
  generated = datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%d %H:%M UTC')
  page = '\n'.join([
      '<!DOCTYPE html>', '<html><head><meta charset="utf-8">',
      '<title>tf_cnn_benchmarks results</title>',
      '<style>%s</style>' % PAGE_CSS, '</head><body>',
      '<h1>tf_cnn_benchmarks results</h1>',
      '<p>%d successful run(s) of %d record(s) from %s; TF versions: %s; '
      'grouped by %s. Generated %s.</p>' % (
          len(runs), len(frame), html.escape(', '.join(
              sorted(set(frame['source_dir'])))),
          html.escape(', '.join(plots.tf_versions(runs)) or 'none'),
          html.escape(group_name), generated),
      '<p><a href="%s">History and change points</a> (runs in %s order, '
      'the steps found in them)</p>' % (history_name, args.history_order),
  ] + sections + [IMAGE_CHECK_SCRIPT, '</body></html>', ''])
  index_path = os.path.join(output, 'index.html')
  write_text_atomically(index_path, page)
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
    frame = store.require_runs(store.load_runs(args.result_dir),
                               args.result_dir)
    index_path = render(frame, args, args.output)
  except UsageError as error:
    return report_usage_error(error)
  print('wrote %s' % os.path.abspath(index_path))
  return 0


if __name__ == '__main__':
  sys.exit(main())
