"""PERFORMANCE.md's side-by-side figures: every pair kept, every row pooled.

A quoted ratio pools every measurement of it (issue #28 item 6). These tests
hold the document to its data: each pair ratio printed in a side-by-side
table is a row of benchmarks/data/vs_original_pairs.csv, the pooled tables
are what benchmarks/vs_original_pooled.py prints from it, and vs_original.py
appends what it measures in the form the pooling reads.
"""

import collections
import csv
import os
import re
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'benchmarks'))

import vs_original  # pylint: disable=g-import-not-at-top
import vs_original_pooled  # pylint: disable=g-import-not-at-top

DOC = os.path.join(REPO, 'PERFORMANCE.md')
_RATIOS = re.compile(r'^\d\.\d\d(, \d\.\d\d)+$')


def _section(text, start, end):
  return text[text.index(start):text.index(end)]


def _doc_ratio_lists():
  """Each ours/original table row's pair ratios, as a sorted tuple."""
  with open(DOC, encoding='utf-8') as f:
    text = _section(f.read(), '### Side by side with the original',
                    '### Where the time went')
  lists, header = [], ''
  for line in text.splitlines():
    if not line.startswith('|'):
      header = ''
      continue
    cells = [c.strip() for c in line.strip('|').split('|')]
    if not header:
      header = line
      continue
    # Ours against ours (sync_cost, malloc_cost) is no side-by-side.
    if ('original images/sec' not in header or
        any(cells[0].startswith('`%s`' % name)
            for name in vs_original.OURS_ONLY_CONFIGS)):
      continue
    lists.extend(tuple(sorted(cell.split(', '))) for cell in cells
                 if _RATIOS.match(cell))
  return lists


def _csv_ratio_lists():
  runs = collections.defaultdict(list)
  with open(vs_original_pooled.DEFAULT_CSV, newline='') as f:
    for row in csv.DictReader(f):
      runs[(row['harness'], row['configuration'], row['variant'],
            row['run'])].append(row['ratio'])
  return [tuple(sorted(r)) for r in runs.values()]


def test_every_pair_ratio_printed_is_kept_in_the_csv():
  doc = _doc_ratio_lists()
  # Every side-by-side table since 925768e, and nothing else.
  assert len(doc) == 49, doc
  assert sorted(doc) == sorted(_csv_ratio_lists())


def _doc_block(name):
  with open(DOC, encoding='utf-8') as f:
    text = f.read()
  begin, end = '<!-- %s: begin -->' % name, '<!-- %s: end -->' % name
  return text[text.index(begin) + len(begin):text.index(end)].strip()


@pytest.mark.parametrize('name,latest', [('pooled latest', True),
                                         ('pooled all', False)])
def test_the_pooled_tables_are_the_script_s_output(name, latest, capsys):
  argv = ['--latest'] if latest else []
  assert vs_original_pooled.main(argv) == 0
  assert _doc_block(name) == capsys.readouterr().out.strip()


def _pairs_csv(path, rows):
  with open(path, 'w', newline='') as f:
    writer = csv.DictWriter(f, fieldnames=vs_original_pooled.COLUMNS)
    writer.writeheader()
    for r in rows:
      writer.writerow(dict(zip(vs_original_pooled.COLUMNS, r)))


def test_two_runs_of_one_configuration_at_one_commit_pool_into_one_row(
    tmp_path):
  path = str(tmp_path / 'pairs.csv')
  # 5 pairs that came out low, then 5 more: one answer from all 10.
  first = ['0.96', '0.97', '0.98', '0.99', '1.01']
  second = ['1.00', '1.02', '1.03', '1.04', '1.05']
  _pairs_csv(path, [('aaa', 'd', 'trivial', '', '1', i, r, '')
                    for i, r in enumerate(first)] +
             [('aaa', 'd', 'trivial', '', '2', i, r, '')
              for i, r in enumerate(second)] +
             [('bbb', 'd', 'trivial', '', '1', 0, '2.00', '')])
  pooled = vs_original_pooled.pool(vs_original_pooled.read_pairs(path))
  row = pooled[pooled.harness == 'aaa'].iloc[0]
  assert (row.runs, row.pairs, row.below_1) == (2, 10, 4)
  assert row['median'] == pytest.approx(1.005)
  # The newest harness is the one --latest keeps.
  latest = vs_original_pooled.latest(pooled)
  assert list(latest.harness) == ['bbb']


def test_a_csv_without_the_columns_is_refused(tmp_path, capsys):
  path = tmp_path / 'pairs.csv'
  path.write_text('commit,ratio\nabc,1.0\n')
  assert vs_original_pooled.main(['--pairs_csv', str(path)]) == 2
  assert 'lacks the column(s) harness' in capsys.readouterr().err


def _run(side, rate=None, error=None, share=None):
  return vs_original.Run(side, rate=rate, error=error, share=share)


def test_vs_original_appends_each_pair_where_both_ran(tmp_path):
  comparison = vs_original.Comparison(lambda text='': None)
  state = {}

  def ours():
    return 'total images/sec: %s\n' % state['rates'][0], 0.01

  def original():
    if state['rates'][1] is None:
      raise vs_original.RunFailed('exit code 1')
    return 'total images/sec: %s\n' % state['rates'][1], 0.02

  # One pair a configuration; the second one's original run fails.
  for label, rates in (('trivial', (20.0, 10.0)), ('resnet50', (30.0, None)),
                       ('vgg16', (12.0, 10.0))):
    state['rates'] = rates
    comparison.run(label, ('ours', 'original'),
                   {'ours': ours, 'original': original},
                   {'ours': 0, 'original': 0}, 1)
  # Ours against ours is not a side-by-side measurement.
  comparison.run('sync_cost', ('mean', 'barrier'),
                 {'mean': lambda: ('total images/sec: 1\n', 0.0),
                  'barrier': lambda: ('total images/sec: 1\n', 0.0)},
                 {'mean': 0, 'barrier': 0}, 1)
  rows = vs_original.pair_rows(comparison, 'abc1234', '2026-11-27',
                               '20261127T000000', '--trivial_num_batches=9')
  path = str(tmp_path / 'pairs.csv')
  vs_original.append_pairs(path, rows)
  vs_original.append_pairs(path, rows)  # a second run appends, one header
  table = vs_original_pooled.read_pairs(path)
  assert list(table.configuration) == ['trivial', 'vgg16'] * 2
  assert list(table.ratio) == [2.0, 1.2] * 2
  assert set(table.variant) == {'--trivial_num_batches=9'}
  assert table.note[0] == 'others 1 / 2%'
  pooled = vs_original_pooled.pool(table)
  assert list(pooled.pairs) == [2, 2]


def test_the_variant_names_every_flag_beyond_the_defaults():
  args, extra = vs_original.parse_args(['--trivial_num_batches=2000',
                                        '--use_fp16'])
  assert vs_original.variant_of(args, extra) == (
      '--use_fp16 --trivial_num_batches=2000')
  args, extra = vs_original.parse_args([])
  assert vs_original.variant_of(args, extra) == ''
