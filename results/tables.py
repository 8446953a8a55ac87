"""Render a comparison.Comparison as Markdown or HTML."""

import html
import math

from results import comparison as comparison_lib
from results import stats


def _number(value, digits=1):
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return 'n/a'
  return '%.*f' % (digits, value)


def _signed_pct(value):
  if value is None or math.isnan(value):
    return 'n/a'
  return '%+.1f%%' % value


def _interval(result):
  if result is None or math.isnan(result.change_pct_low):
    return 'n/a'
  return '[%+.1f%%, %+.1f%%]' % (result.change_pct_low, result.change_pct_high)


def _p_value(result):
  if result is None:
    return 'n/a'
  return '%.2g' % result.p_value


def change_summary(row):
  """'-33.1% [-35.0%, -31.2%], p 0.029' for one ConfigComparison: the
  Hodges-Lehmann change, its interval and the p-value."""
  return '%s %s, p %s' % (_signed_pct(row.result.change_pct if row.result
                                      else None),
                          _interval(row.result), _p_value(row.result))


def method_sentence(comparison):
  confidence = 100 * (1 - comparison.alpha)
  return (
      'Test: two-sided Mann-Whitney U on log images/sec, alpha = %g; a '
      'regression or improvement needs p < alpha and a change of at least '
      '%g%%. `medians`: candidate median / baseline median - 1, from the '
      'middle run of each side alone. `HL change`: the Hodges-Lehmann '
      'estimate, the median of candidate/baseline over every pair of runs; '
      'it uses every run, so it can differ from `medians` (even in sign) '
      'when runs are spread or clustered, and it is what the test, the CI '
      '(Mann-Whitney/Moses %g%% interval) and the verdict use. Basis `runs`: '
      'one sample per run (process); `steps`: a group had a single run, so '
      'per-step samples were used instead.' % (
          comparison.alpha, comparison.min_effect_pct, confidence))


def headline(comparison):
  return 'Comparing %s: baseline %s vs candidate %s' % (
      comparison.group_by, comparison.baseline, comparison.candidate)


def tally(comparison):
  verdicts = (stats.REGRESSION, stats.IMPROVEMENT, stats.NO_CHANGE,
              stats.INCONCLUSIVE, comparison_lib.MISSING)
  parts = ['%d %s' % (comparison.count(v), v) for v in verdicts
           if comparison.count(v)]
  return ', '.join(parts) or 'no configurations'


def table_rows(comparison):
  """Header and cell texts shared by both renderers."""
  fields = comparison.shown_fields()
  header = ([comparison_lib.SHORT_NAMES.get(f, f) for f in fields]
            + ['baseline %s (n)' % comparison.unit,
               'candidate %s (n)' % comparison.unit, 'medians',
               'HL change',
               '%g%% CI' % (100 * (1 - comparison.alpha)), 'p', 'basis',
               'verdict', 'detectable', 'note'])
  rows = []
  for row in comparison.rows:
    values = comparison_lib.key_values(row.key)
    result = row.result
    rows.append(
        [str(values[f]) for f in fields]
        + ['%s (%d)' % (_number(row.baseline_median), row.baseline_runs),
           '%s (%d)' % (_number(row.candidate_median), row.candidate_runs),
           _signed_pct(row.median_change_pct if result else None),
           _signed_pct(result.change_pct if result else None),
           _interval(result), _p_value(result), row.basis, row.verdict,
           row.power, row.note])
  return header, rows


def _markdown_cell(text):
  return text.replace('|', '\\|')


def render_markdown(comparison):
  header, rows = table_rows(comparison)
  lines = ['## ' + headline(comparison), '', method_sentence(comparison), '',
           '| ' + ' | '.join(header) + ' |',
           '|' + '|'.join('---' for _ in header) + '|']
  verdict_index = header.index('verdict')
  for cells in rows:
    cells = list(cells)
    if cells[verdict_index] == stats.REGRESSION:
      cells[verdict_index] = '**%s**' % cells[verdict_index]
    lines.append('| ' + ' | '.join(_markdown_cell(c) for c in cells) + ' |')
  lines += ['', 'Result: ' + tally(comparison), '']
  if comparison.power_source:
    lines += [power_sentence(comparison), '']
  return '\n'.join(lines)


def power_sentence(comparison):
  return ('`detectable`: the smallest injected slowdown caught in >= 95%% of '
          'trials with <= 5%% false alarms at this many runs a side, from '
          'results/detection_power.json (%s).' % comparison.power_source)


TABLE_CSS = """
table.comparison { border-collapse: collapse; font: 13px sans-serif; }
table.comparison th, table.comparison td { border: 1px solid #ccc;
  padding: 3px 6px; text-align: left; }
table.comparison tr.regression td { background: #fdd; }
table.comparison tr.improvement td { background: #dfd; }
table.comparison tr.missing td, table.comparison tr.inconclusive td {
  color: #777; }
"""


def render_html_fragment(comparison):
  """A <section> with the headline, method, table and tally (no <html>)."""
  header, rows = table_rows(comparison)
  out = ['<section class="comparison">',
         '<h3>%s</h3>' % html.escape(headline(comparison)),
         '<p>%s</p>' % html.escape(method_sentence(comparison)),
         '<table class="comparison">',
         '<tr>%s</tr>' % ''.join('<th>%s</th>' % html.escape(h)
                                 for h in header)]
  for cells, row in zip(rows, comparison.rows):
    out.append('<tr class="%s">%s</tr>' % (
        row.verdict.replace(' ', '-'),
        ''.join('<td>%s</td>' % html.escape(c) for c in cells)))
  out += ['</table>',
          '<p class="tally">Result: %s</p>' % html.escape(tally(comparison)),
          '<p class="note">%s</p>' % html.escape(power_sentence(comparison))
          if comparison.power_source else '',
          '</section>']
  return '\n'.join(out)


def render_html_document(comparison):
  return ('<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
          '<title>%s</title><style>%s</style></head><body>\n%s\n</body></html>\n'
          % (html.escape(headline(comparison)), TABLE_CSS,
             render_html_fragment(comparison)))
