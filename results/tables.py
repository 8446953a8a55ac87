"""Render a comparison.Comparison as Markdown, HTML or JSON."""

import collections
import html
import json
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


def _p_value(result, adjusted=False):
  if result is None:
    return 'n/a'
  return '%.2g' % (result.p_adjusted if adjusted else result.p_value)


def detectable(row):
  """The `detectable` cell: the smallest slowdown caught at 80% power."""
  if row.test == comparison_lib.MISSING or math.isnan(row.detectable_pct):
    return 'n/a'
  return '%.1f%%' % row.detectable_pct


def runs_needed(row):
  """The `runs for 5%` cell."""
  if row.test == comparison_lib.MISSING:
    return 'n/a'
  return '%d%s' % (row.runs_needed, ' pairs' if row.paired else '')


def change_summary(row):
  """'-33.1% [-35.0%, -31.2%], p 0.029 (Holm 0.058), paired Wilcoxon' for
  one ConfigComparison: the Hodges-Lehmann change, its interval, the raw
  and adjusted p-values and the test."""
  result = row.result
  adjusted = ('' if result is None or result.p_adjusted == result.p_value
              else ' (Holm %s)' % _p_value(result, adjusted=True))
  return '%s %s, p %s%s, %s' % (
      _signed_pct(result.change_pct if result else None), _interval(result),
      _p_value(result), adjusted, row.test)


def method_sentence(comparison):
  confidence = 100 * (1 - comparison.alpha)
  return (
      'Test (`test`): runs taken in interleaved pairs (the same plan and '
      'round of the runner) are judged by the Wilcoxon signed-rank test on '
      'the pairs\' log ratios (`paired Wilcoxon`), other runs by the '
      'two-sided Mann-Whitney U on log images/sec (`Mann-Whitney`); a side '
      'with one run gets no verdict (`none`: the steps of one process are '
      'not independent samples). alpha = %g for the configurations judged '
      'together: a regression or improvement needs the Holm-adjusted p '
      '(`p Holm`) below alpha and a change of at least %g%%; `p` is the '
      'test\'s own. `medians`: candidate median / baseline median - 1, from '
      'the middle run of each side alone. `HL change`: the Hodges-Lehmann '
      'estimate, the median of candidate/baseline over every pair of runs '
      '(paired: of the Walsh averages of the pairs\' log ratios); it uses '
      'every run, so it can differ from `medians` (even in sign) when runs '
      'are spread or clustered, and it is what the test, the CI (%g%%, per '
      'configuration, from the same test) and the verdict use. '
      '`detectable`: the smallest slowdown this comparison would have caught '
      'with 80%% power at p < %.3g (alpha over the configurations measured '
      'on both sides: what a lone change must reach under Holm), from the '
      'spread of its runs (normal approximation on log ratios, runs scaled '
      'by the rank test\'s efficiency 3/pi); `runs for 5%%`: the runs a side '
      '(pairs) that would catch a 5%% slowdown so.' % (
          comparison.alpha, comparison.min_effect_pct, confidence,
          comparison.power_level))


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
               '%g%% CI' % (100 * (1 - comparison.alpha)), 'p', 'p Holm',
               'test', 'verdict', 'detectable', 'runs for 5%', 'note'])
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
           _interval(result), _p_value(result),
           _p_value(result, adjusted=True), row.test, row.verdict,
           detectable(row), runs_needed(row), row.note])
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
  return '\n'.join(lines)


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
  # An explanation that several rows share is said once, below the table,
  # and those rows cite it by number; what only one row says stays in its
  # cell (the same paragraph on every row is read once, not five times).
  note_index = header.index('note')
  parts_of = [[part for part in
               cells[note_index].split(comparison_lib.NOTE_SEPARATOR) if part]
              for cells in rows]
  counts = collections.Counter(part for parts in parts_of
                               for part in set(parts))
  shared = []
  for cells, parts, row in zip(rows, parts_of, comparison.rows):
    cells = list(cells)
    own, cited = [], []
    for part in parts:
      if counts[part] < 2:
        own.append(part)
        continue
      if part not in shared:
        shared.append(part)
      cited.append('[%d]' % (shared.index(part) + 1))
    cells[note_index] = comparison_lib.NOTE_SEPARATOR.join(
        own + ([' '.join(cited)] if cited else []))
    out.append('<tr class="%s">%s</tr>' % (
        row.verdict.replace(' ', '-'),
        ''.join('<td>%s</td>' % html.escape(c) for c in cells)))
  out.append('</table>')
  if shared:
    out.append('<ol class="notes">%s</ol>' % ''.join(
        '<li>%s</li>' % html.escape(part) for part in shared))
  out += ['<p class="tally">Result: %s</p>' % html.escape(tally(comparison)),
          '</section>']
  return '\n'.join(out)


def render_html_document(comparison):
  return ('<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
          '<title>%s</title><style>%s</style></head><body>\n%s\n</body></html>\n'
          % (html.escape(headline(comparison)), TABLE_CSS,
             render_html_fragment(comparison)))


def _json_number(value):
  """JSON has no NaN: a figure that does not exist is null."""
  if value is None or (isinstance(value, float) and not math.isfinite(value)):
    return None
  return value


def _json_row(row):
  result = row.result
  figures = {
      'config': comparison_lib.key_values(row.key),
      'baseline_runs': row.baseline_runs, 'candidate_runs': row.candidate_runs,
      'baseline_median': row.baseline_median,
      'candidate_median': row.candidate_median,
      'medians_change_pct': row.median_change_pct, 'test': row.test,
      'paired': row.paired, 'verdict': row.verdict,
      'detectable_slowdown_pct': row.detectable_pct,
      'runs_for_5pct': row.runs_needed or None, 'spread': row.spread,
      'note': row.note}
  for name in ('change_pct', 'change_pct_low', 'change_pct_high', 'p_value',
               'p_adjusted', 'smallest_possible_p', 'method'):
    figures[name] = getattr(result, name) if result is not None else None
  return {name: _json_number(value) for name, value in figures.items()}


def render_json(comparison):
  """The comparison for machines: the settings, then per configuration its
  figures, the test used, and its raw and Holm-adjusted p."""
  return json.dumps({
      'group_by': comparison.group_by, 'baseline': comparison.baseline,
      'candidate': comparison.candidate, 'alpha': comparison.alpha,
      'min_effect_pct': comparison.min_effect_pct,
      'family_adjustment': 'Holm', 'power': stats.POWER,
      'power_level': comparison.power_level, 'result': tally(comparison),
      'has_regression': comparison.has_regression,
      'rows': [_json_row(row) for row in comparison.rows]},
                    indent=2, allow_nan=False) + '\n'
