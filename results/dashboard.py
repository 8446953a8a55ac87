"""`tf_cnn_benchmarks dashboard`: a static HTML page of the results.

  tf_cnn_benchmarks dashboard --result_dir DIR [--result_dir DIR2] \
      --output OUT [--baseline B --candidate C [--by tf_version|label|dir]] \
      [--max_step_charts 8]

Writes OUT/index.html and PNG charts next to it (no server; open the file):
throughput per configuration and TF version with IQR error bars, scaling with
towers and workers (when runs vary them), the step times of the latest run of
each configuration, a table of all runs, and the regression table of compare;
and history.html (results/history/page.py), linked from it: each
configuration's runs in --history_order with the steps found in them.
Without --baseline/--candidate the two newest TF versions present are
compared (or the two labels, when there is one version and two labels).
Every file is written atomically, index.html last.

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
from results.atomic_files import write_bytes_atomically, write_text_atomically
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
                      help='step-time charts for at most this many configurations')
  parser.add_argument('--history_order', choices=history_ordering.ORDERS,
                      default='time', help='how history.html orders the runs')
  return parser


def choose_groups(frame, runs, args):
  """(group_by, baseline, candidate) for the regression table, or None."""
  if args.baseline or args.candidate:
    if not (args.baseline and args.candidate):
      raise UsageError('give both --baseline and --candidate for the '
                       'regression table, or neither (then the two newest TF '
                       'versions are compared).')
    group_by = args.by
    if group_by == 'auto':
      group_by = comparison_lib.guess_group_by(frame, args.baseline,
                                               args.candidate)
    return group_by, args.baseline, args.candidate
  versions = plots.tf_versions(runs)
  if len(versions) >= 2:
    return 'tf_version', versions[-2], versions[-1]
  labels = comparison_lib.available_values(runs, 'label')
  if len(labels) == 2:
    return 'label', labels[0], labels[1]
  return None


def _runs_table(runs, frame):
  """Every configuration x TF version: runs, median and spread of images/sec."""
  cells = {}
  for run in runs:
    key = (comparison_lib.config_key(run), str(run.get(plots.TF_VERSION)))
    cells.setdefault(key, []).append(run[plots.IPS])
  keys = sorted({k for k, _ in cells}, key=comparison_lib.sortable_key)
  fields = comparison_lib.varying_fields(keys)
  head = [comparison_lib.SHORT_NAMES.get(f, f) for f in fields] + [
      'TF version', 'runs', 'median img/s', 'min', 'max']
  rows = []
  for (key, version), values in sorted(
      cells.items(),
      key=lambda kv: comparison_lib.config_and_version_key(kv[0])):
    named = dict(zip(comparison_lib.CONFIG_KEY_FIELDS, key))
    rows.append([str(named[f]) for f in fields] + [
        version, str(len(values)), '%.1f' % np.median(values),
        '%.1f' % min(values), '%.1f' % max(values)])
  out = [pd.DataFrame(rows, columns=head).to_html(
      index=False, classes='runs', border=0, justify='left')]
  failed = frame[frame['status'] != 'ok']
  if len(failed):
    out.append('<p class="note">%d run(s) did not succeed and are left out: '
               '%s</p>' % (len(failed), html.escape(', '.join(
                   '%s (%s)' % (os.path.basename(p), s)
                   for p, s in zip(failed['path'], failed['status'])))))
  return '\n'.join(out)


def _latest_run_per_config(runs, limit):
  latest = {}
  for run in runs:   # runs come sorted by start time: later ones overwrite
    latest[comparison_lib.config_key(run)] = run
  ordered = sorted(latest.items(), key=lambda kv: comparison_lib.sortable_key(kv[0]))
  return [run for _, run in ordered][:limit]


def _image(name, alt):
  return '<img src="%s" alt="%s">' % (html.escape(name), html.escape(alt))


def render(frame, args, output):
  """Writes the charts, then index.html; returns the page's path."""
  runs = comparison_lib.usable_runs(frame)
  groups = choose_groups(frame, runs, args)
  sections = []

  def chart(name, png, alt, caption):
    if png is None:
      sections.append('<p class="note">%s</p>' % html.escape(caption))
      return
    write_bytes_atomically(os.path.join(output, name), png)
    sections.append(_image(name, alt))

  sections.append('<h2>Throughput by TensorFlow version</h2>')
  chart('throughput.png', plots.throughput_by_version(runs),
        'images/sec per configuration and TF version',
        'No successful runs to plot.')
  sections.append('<h2>Scaling</h2>')
  chart('scaling.png', plots.scaling(runs), 'images/sec against towers and '
        'workers', 'No configuration was run with more than one tower count '
        'or worker count, so there is no scaling chart.')
  sections.append('<h2>Regression check</h2>')
  if groups:
    result = comparison_lib.compare_groups(frame, *groups, alpha=args.alpha,
                                           min_effect_pct=args.min_effect)
    sections.append(tables.render_html_fragment(result))
  else:
    sections.append('<p class="note">Only one TF version and label: nothing '
                    'to compare. Pass --baseline and --candidate.</p>')
  sections.append('<h2>Runs</h2>')
  sections.append(_runs_table(runs, frame))
  sections.append('<h2>Step times of the latest run of each configuration</h2>')
  labels = plots.config_labels(runs)
  for index, run in enumerate(
      _latest_run_per_config(runs, args.max_step_charts), 1):
    title = '%s, TF %s, %s (run %s)' % (
        labels[comparison_lib.config_key(run)],
        run.get(plots.TF_VERSION), run.get('started_at'),
        str(run.get('run_id'))[:8])
    chart('steps_%d.png' % index, plots.step_times(run, title),
          'step times: ' + title, 'Run %s has no step times.' % title)
  history_name = history_page.write(frame, output, args.history_order,
                                    PAGE_CSS, IMAGE_CHECK_SCRIPT)
  generated = datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%d %H:%M UTC')
  page = '\n'.join([
      '<!DOCTYPE html>', '<html><head><meta charset="utf-8">',
      '<title>tf_cnn_benchmarks results</title>',
      '<style>%s</style>' % PAGE_CSS, '</head><body>',
      '<h1>tf_cnn_benchmarks results</h1>',
      '<p>%d successful run(s) of %d record(s) from %s; TF versions: %s. '
      'Generated %s.</p>' % (
          len(runs), len(frame), html.escape(', '.join(
              sorted(set(frame['source_dir'])))),
          html.escape(', '.join(plots.tf_versions(runs)) or 'none'), generated),
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
