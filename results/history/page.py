"""The dashboard's history page (history.html beside index.html): per
configuration, its runs in order as a chart (chart.py) with the steps
found (change_points.py), the steps as a table, and the runs with their
commit and TF version."""

import html
import os

import pandas as pd

from basics.atomic_files import write_bytes_atomically, write_text_atomically
from results.errors import UsageError
from results.history import analysis
from results.history import change_points
from results.history import chart
from results.history import command
from results.history import ordering

PAGE_NAME = 'history.html'
CHART_NAME = 'history_%d.png'
# Beyond this many configurations the page lists the rest without charts.
MAX_CHARTS = 40

# Counts the page's errors (scripts, and resources that failed to load) in
# <body data-page-errors="N">, so a headless browser can fail on them. In
# <head>, capturing, so it sees errors from anything after it.
PAGE_ERROR_SCRIPT = """
<script>
window.pageErrors = [];
window.addEventListener('error', function (event) {
  var target = event.target || {};
  window.pageErrors.push(event.message || ('failed to load ' +
      (target.src || target.href || target.tagName)));
  if (document.body) {
    document.body.setAttribute('data-page-errors',
                               String(window.pageErrors.length));
  }
}, true);
window.addEventListener('load', function () {
  document.body.setAttribute('data-page-errors',
                             String(window.pageErrors.length));
});
</script>
"""


def _runs_table(one, order):
  rows = [[i + 1, ordering.started_text(run), ordering.short_commit(run),
           ordering.version_of(run),
           ordering.cell_text(run.get('label')) or '',
           '%.1f' % run[analysis.IPS]]
          for i, run in enumerate(one.series.runs)]
  table = pd.DataFrame(rows, columns=['#', 'started', 'commit', 'TF version',
                                      'label', 'images/sec'])
  return ('<details><summary>%d run(s) in %s order</summary>%s</details>'
          % (len(rows), order, table.to_html(index=False, classes='runs',
                                             border=0, justify='left')))


def _steps_list(one, order, min_step_pct):
  if not one.steps:
    return '<p class="note">No step of %g%% or more.</p>' % min_step_pct
  items = ''.join('<li><code>%s</code></li>' % html.escape(
      command.step_line(step, one.series.runs, order).strip())
                  for step in one.steps)
  return '<ul class="steps">%s</ul>' % items


def _sections(history, output):
  sections = ['<p>%s</p>' % html.escape(
      'Runs ordered by %s. ' % history.order.replace('_', ' ')
      + 'Method: ' + change_points.method_text(
          history.alpha, history.min_step_pct))]
  if history.left_out:
    sections.append('<p class="note">%d run(s) record no harness commit and '
                    'are left out.</p>' % history.left_out)
  fields = history.shown_fields()
  for index, one in enumerate(history.histories, 1):
    title = ordering.series_title(one.series, fields)
    sections.append('<h2>%s</h2>' % html.escape(title))
    sections.append('<p class="note">%d run(s), %s</p>' % (
        len(one.series.runs), html.escape(ordering.series_span(
            one.series, history.order))))
    if index <= MAX_CHARTS:
      name = CHART_NAME % index
      write_bytes_atomically(os.path.join(output, name), chart.history_chart(
          one, history.order, title))
      sections.append('<img src="%s" alt="%s">' % (
          name, html.escape('history of ' + title)))
    sections.append(_steps_list(one, history.order, history.min_step_pct))
    sections.append(_runs_table(one, history.order))
  return sections


def write(frame, output, order, css, image_check_script):
  """Writes the charts, then history.html; returns the page's file name.

  A history that cannot be drawn (say, --order commit on records without
  commits) gives a page that says why, not a failed dashboard.
  """
  try:
    history = analysis.analyse(frame, order)
    sections = _sections(history, output)
  except UsageError as error:
    sections = ['<p class="note">No history: %s</p>' % html.escape(str(error))]
  page = '\n'.join([
      '<!DOCTYPE html>', '<html><head><meta charset="utf-8">',
      '<title>tf_cnn_benchmarks history</title>', PAGE_ERROR_SCRIPT,
      '<style>%s</style>' % css, '</head><body>',
      '<p><a href="index.html">&larr; dashboard</a></p>',
      '<h1>History and change points</h1>'] + sections + [
          image_check_script, '</body></html>', ''])
  write_text_atomically(os.path.join(output, PAGE_NAME), page)
  return PAGE_NAME
