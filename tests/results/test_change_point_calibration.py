"""studies/change_point_calibration.py: the script behind the penalty table
in results/history/change_points.py runs and prints that table."""

import os
import re
import subprocess
import sys

import pytest

from tests.niced_timeouts import wall_bound

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, 'studies', 'change_point_calibration.py')


def test_quick_mode_prints_a_rate_per_factor_and_scenario():
  out = subprocess.run([sys.executable, SCRIPT, '--quick'], cwd=REPO,
                       capture_output=True, text=True,
                       timeout=wall_bound(120))
  assert out.returncode == 0, out.stdout + out.stderr
  assert 'seeds 0..19 per scenario' in out.stdout
  header, *rows = out.stdout.splitlines()[1:]
  assert header.split() == ['factor', 'false', 'step', 'shown', 'false',
                            'step', 'confirmed', 'step', '5%', 'found',
                            'step', '10%', 'found']
  rates = {}
  for row in rows:
    factor, *cells = row.split()
    rates[factor] = [float(c.rstrip('%')) for c in cells]
  assert list(rates) == ['2', '4', '6', '8']
  for shown, confirmed, five, ten in rates.values():
    assert 0 <= confirmed <= shown <= 100 and 0 <= five <= ten <= 100
  # A 10% step in 2% noise is found by every factor; flat series rarely
  # show a step with the factor in use.
  assert all(r[3] >= 90 for r in rates.values())
  assert rates['6'][1] <= 10


@pytest.mark.slow
def test_the_table_in_change_points_is_what_the_script_prints():
  """The comment's rows are the full script's output, figure for figure
  (an edit of one without the other shows here)."""
  out = subprocess.run([sys.executable, SCRIPT], cwd=REPO,
                       capture_output=True, text=True,
                       timeout=wall_bound(600))
  assert out.returncode == 0, out.stdout + out.stderr
  printed = [row.split() for row in out.stdout.splitlines()[2:]]
  with open(os.path.join(REPO, 'results', 'history',
                         'change_points.py')) as source:
    text = source.read()
  assert 'studies/change_point_calibration.py' in text
  commented = [list(row) for row in re.findall(
      r'^#\s+(\d)\s+([\d.]+%)\s+([\d.]+%)\s+([\d.]+%)\s+([\d.]+%)$',
      text, re.M)]
  assert commented == printed
