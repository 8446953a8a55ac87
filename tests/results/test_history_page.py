"""The dashboard's history page: charts with the steps, linked from
index.html, and it renders in headless Chromium without page errors."""

import os
import pathlib
import re
import shutil
import subprocess

import matplotlib.image
import numpy as np
import pytest

from results import dashboard
from tests import tools
from tests.niced_timeouts import wall_bound
from tests.results.history_factory import sha, write_history

PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


@pytest.fixture(scope='module')
def site(tmp_path_factory):
  """A dashboard of two configurations' histories: batch 32 steps down 10%
  at commit 5; batch 64 stays flat."""
  runs = tmp_path_factory.mktemp('runs')
  rng = np.random.default_rng(21)
  write_history(runs, [1000.0] * 5 + [900.0] * 4, rng)
  write_history(runs, [1800.0] * 9, rng, batch_size_per_device=64)
  output = tmp_path_factory.mktemp('site')
  assert dashboard.main(['dashboard', '--result_dir', str(runs), '--output',
                         str(output), '--history_order', 'commit']) == 0
  return output


def test_history_page_has_a_chart_per_configuration_and_the_steps(site):
  assert {'history.html', 'history_1.png', 'history_2.png'} <= set(
      os.listdir(site))
  for name in ('history_1.png', 'history_2.png'):
    assert (site / name).read_bytes()[:8] == PNG_MAGIC
  assert '<a href="history.html">' in (site / 'index.html').read_text()
  page = (site / 'history.html').read_text()
  assert page.count('<img src="history_') == 2
  assert 'trivial batch=32, TF 2.21.0' in page
  assert 'commit %s..%s' % (sha(4)[:7], sha(5)[:7]) in page
  assert page.count('<li><code>down') == 1
  assert 'No step of 2% or more.' in page       # the flat batch-64 series
  assert '2.21.0' in page and sha(8)[:7] in page  # the runs' labels


def test_history_page_says_why_when_there_is_no_history(tmp_path):
  runs = tmp_path / 'runs'
  write_history(runs, [1000.0] * 3, np.random.default_rng(2), commits=False)
  assert dashboard.main(['dashboard', '--result_dir', str(runs), '--output',
                         str(tmp_path / 'site'), '--history_order',
                         'commit']) == 0
  page = (tmp_path / 'site' / 'history.html').read_text()
  assert 'No history: none of the 9 successful run(s) records a harness' in page


def _chromium(profile, *arguments):
  return [tools.chromium(), '--headless', '--no-sandbox', '--disable-gpu',
          '--disable-dev-shm-usage', '--disable-background-networking',
          '--disable-component-update', '--disable-sync', '--no-first-run',
          '--enable-logging=stderr', '--v=0',
          '--user-data-dir=%s' % profile, '--virtual-time-budget=10000'] + list(
              arguments)


def _load(command):
  result = subprocess.run(command, capture_output=True, text=True,
                          timeout=wall_bound(120), check=False)
  body = re.search(r'<body[^>]*>', result.stdout)
  assert body, 'no DOM dumped; chromium said: %s' % result.stderr[-1000:]
  return body.group(0), result.stderr


def test_history_page_renders_in_headless_chromium(site, tmp_path):
  tools.chromium()
  site = pathlib.Path(shutil.copytree(site, tmp_path / 'site'))  # broken below
  url = (site / 'history.html').as_uri()
  profile = tmp_path / 'profile'
  body, log = _load(_chromium(profile, '--dump-dom', url))
  assert 'data-images-status="ok"' in body, body
  assert 'data-images-total="2"' in body, body
  assert 'data-page-errors="0"' in body, (body, log[-2000:])
  assert 'Uncaught' not in log, log[-2000:]
  shot = tmp_path / 'history.png'
  subprocess.run(_chromium(profile, '--screenshot=%s' % shot,
                           '--window-size=1200,1400', '--hide-scrollbars',
                           url), capture_output=True, timeout=wall_bound(120),
                 check=False)
  pixels = matplotlib.image.imread(shot)
  assert pixels.shape[:2] == (1400, 1200)
  ink = (pixels[..., :3] < 0.9).any(axis=-1).mean()
  assert ink > 0.01, 'the screenshot is blank (%.4f of pixels not white)' % ink
  # The checks are honest: a missing chart counts as a broken image and a
  # page error.
  os.remove(site / 'history_2.png')
  body, _ = _load(_chromium(profile, '--dump-dom', url))
  assert 'data-images-status="broken:1"' in body, body
  assert 'data-page-errors="1"' in body, body
