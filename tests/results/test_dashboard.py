"""`tf_cnn_benchmarks dashboard`: files, and the page renders in Chromium."""

import os
import re
import subprocess

import numpy as np
import pytest

from results import comparison as comparison_lib
from results import dashboard
from tests import tools
from tests.niced_timeouts import wall_bound
from tests.results.record_factory import make_record, write_record, write_runs



@pytest.fixture(scope='module')
def result_dir(tmp_path_factory):
  folder = tmp_path_factory.mktemp('runs')
  rng = np.random.default_rng(3)
  # Six runs a side: the four configurations are judged together (Holm),
  # and 4 against 4 (p >= 2/70 = 0.029, times four) could never decide.
  for version, speed in (('2.20.0', 1.0), ('2.21.0', 0.93)):
    for towers in (1, 2):
      write_runs(folder, 1000 * speed * towers * (1 + rng.normal(0, 0.01, 6)),
                 rng, tf_version=version, num_devices=towers)
    for workers in (2, 4):
      write_runs(folder, 900 * workers * (1 + rng.normal(0, 0.01, 3)), rng,
                 tf_version=version, model='resnet50', num_workers=workers)
  write_record(folder, make_record(status='failed'))
  return folder


def _render(result_dir, output, *extra):
  return dashboard.main(['dashboard', '--result_dir', str(result_dir),
                         '--output', str(output)] + list(extra))


def test_writes_page_charts_and_regression_table(result_dir, tmp_path, capsys):
  output = tmp_path / 'site'
  assert _render(result_dir, output) == 0
  names = sorted(os.listdir(output))
  charts = ['change', 'scaling', 'steps_1', 'steps_2', 'steps_3', 'steps_4',
            'throughput']
  assert names == sorted(
      ['history.html', 'history_1.png', 'history_2.png', 'history_3.png',
       'history_4.png', 'index.html'] +
      [c + '.png' for c in charts] + [c + '.svg' for c in charts])
  for name in [name for name in names if name.endswith('.png')]:
    assert (output / name).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
  for name in [name for name in names if name.endswith('.svg')]:
    assert b'<svg' in (output / name).read_bytes()[:1000]
  page = (output / 'index.html').read_text()
  assert 'baseline 2.20.0 vs candidate 2.21.0' in page
  assert '<tr class="regression">' in page          # 7% slower trivial
  assert '1 run(s) did not succeed' in page
  assert 'wrote' in capsys.readouterr().out


def test_chosen_groups_and_bad_input(result_dir, tmp_path, capsys):
  output = tmp_path / 'site'
  assert _render(result_dir, output, '--baseline', '2.21.0', '--candidate',
                 '2.20.0', '--by', 'tf_version') == 0
  assert 'baseline 2.21.0 vs candidate 2.20.0' in (
      output / 'index.html').read_text()
  assert _render(tmp_path / 'nowhere', output) == 2
  assert _render(result_dir, output, '--baseline', '2.20.0') == 2
  assert _render(result_dir, output, '--baseline', '1.0', '--candidate',
                 '2.0') == 2
  assert 'error:' in capsys.readouterr().err


def test_page_and_images_load_in_headless_chromium(result_dir, tmp_path):
  chromium = tools.chromium()
  output = tmp_path / 'site'
  assert _render(result_dir, output) == 0
  profile = tmp_path / 'chromium-profile'
  command = [
      chromium, '--headless', '--no-sandbox', '--disable-gpu',
      '--disable-dev-shm-usage', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run',
      '--user-data-dir=%s' % profile, '--virtual-time-budget=10000',
      '--dump-dom', (output / 'index.html').as_uri()]
  body, dom = _dump_body(command)
  assert 'data-images-status="ok"' in body, body
  assert 'data-images-total="7"' in body
  assert 'The change' in dom
  # The marker is honest: a missing chart is reported as broken.
  os.remove(output / 'scaling.png')
  body, _ = _dump_body(command)
  assert 'data-images-status="broken:1"' in body, body


def _dump_body(command):
  result = subprocess.run(command, capture_output=True, text=True,
                          timeout=wall_bound(120), check=False)
  body = re.search(r'<body[^>]*>', result.stdout)
  assert body, 'no DOM dumped; chromium said: %s' % result.stderr[-1000:]
  return body.group(0), result.stdout


def test_release_candidate_sorts_before_its_release():
  versions = ['2.21.0', 'unknown', '2.21.0rc1', '2.10.0', '2.21.0-dev20250801',
              '2.9.1']
  assert sorted(versions, key=comparison_lib.version_sort_key) == [
      '2.9.1', '2.10.0', '2.21.0-dev20250801', '2.21.0rc1', '2.21.0',
      'unknown']


def test_default_pair_takes_the_release_as_the_newest(tmp_path):
  rng = np.random.default_rng(5)
  for version in ('2.20.0', '2.21.0', '2.21.0rc1'):
    write_runs(tmp_path / 'runs', 1000 * (1 + rng.normal(0, 0.01, 3)), rng,
               tf_version=version)
  assert _render(tmp_path / 'runs', tmp_path / 'site') == 0
  page = (tmp_path / 'site' / 'index.html').read_text()
  assert 'baseline 2.21.0rc1 vs candidate 2.21.0' in page


def test_ab_labels_are_grouped_and_every_run_listed(tmp_path):
  """The user's report: 5 runs labelled A, 5 labelled B, one TF version.
  The page groups by label (not one bar of 10 runs), lists every run, and
  charts the step times of all of them."""
  rng = np.random.default_rng(11)
  speeds = {'A': [880.0, 885.0, 924.2, 926.0, 928.0],
            'B': [903.0, 904.0, 905.1, 960.0, 965.0]}
  for label, values in speeds.items():
    write_runs(tmp_path / 'runs', values, rng, label=label, model='lenet')
  write_record(tmp_path / 'runs', make_record(model='lenet', label='B',
                                              status='interrupted'))
  for extra in ([], ['--by', 'label']):
    output = tmp_path / ('site' + '-'.join(extra))
    assert _render(tmp_path / 'runs', output, *extra) == 0
    page = (output / 'index.html').read_text()
    assert 'Throughput by label' in page and 'grouped by label' in page
    assert 'Comparing label: baseline A vs candidate B' in page
    rows = re.findall(r'<tr>\s*<td>lenet</td>\s*<td>(\w)</td>\s*<td>(\d+)</td>'
                      r'(?:\s*<td>[^<]*</td>){3}\s*<td>([^<]*)</td>', page)
    assert [(label, count) for label, count, _ in rows] == [('A', '5'),
                                                            ('B', '5')], page
    assert sorted(rows[1][2].split(', ')) == ['903.0', '904.0', '905.1',
                                              '960.0', '965.0']
    assert 'images/sec is missing, not 0' in page
    assert 'medians -2.1% but HL +2.6%' in page
    written = sorted(os.listdir(output))
    assert [f for f in written if not f.startswith('history')] == [
        'change.png', 'change.svg', 'index.html', 'steps_1.png',
        'steps_1.svg', 'throughput.png', 'throughput.svg'], written
  # Chosen explicitly: the same page, whatever the TF versions say.
  assert _render(tmp_path / 'runs', tmp_path / 'chosen', '--by', 'label',
                 '--baseline', 'B', '--candidate', 'A') == 0
  assert 'baseline B vs candidate A' in (
      tmp_path / 'chosen' / 'index.html').read_text()
