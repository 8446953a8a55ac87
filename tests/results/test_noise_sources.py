"""studies/noise_sources.py: the plan it runs and the figures it draws from
the runs (on synthetic rows with known answers; the study itself runs real
processes and is run by hand: README, "How small a slowdown")."""

import math
import os
import sys

import numpy as np
import pandas as pd
import pytest
import scipy.stats

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'studies'))

# pylint: disable=g-import-not-at-top,wrong-import-position
import noise_sources


def test_each_round_runs_every_variants_pair_back_to_back_in_turn(tmp_path):
  runs = noise_sources.plan(['default', 'no_aslr', 'onednn_off'], 2,
                            ['--model=trivial'], '/usr/bin/python3',
                            str(tmp_path))
  assert [(r.name, r.label, r.repeat_index) for r in runs] == [
      ('default', 'a', 1), ('default', 'b', 1),
      ('no_aslr', 'a', 1), ('no_aslr', 'b', 1),
      ('onednn_off', 'a', 1), ('onednn_off', 'b', 1),
      # The next round: the variants' order rotated, each pair reversed.
      ('no_aslr', 'b', 2), ('no_aslr', 'a', 2),
      ('onednn_off', 'b', 2), ('onednn_off', 'a', 2),
      ('default', 'b', 2), ('default', 'a', 2)]
  by_name = {r.name: r for r in runs}
  assert by_name['onednn_off'].env == {'TF_ENABLE_ONEDNN_OPTS': '0'}
  # A wrapper runs the interpreter under setarch -R.
  wrapper = by_name['no_aslr'].python
  with open(wrapper) as script:
    assert '-R /usr/bin/python3 "$@"' in script.read()
  assert by_name['default'].python == '/usr/bin/python3'


def _rows(variant, ratios, cpu_ratios=None, halves=0.0, seconds=10.0):
  rows = []
  for pair, ratio in enumerate(ratios, 1):
    cpu = ratio if cpu_ratios is None else cpu_ratios[pair - 1]
    for side, ips, cost in (('a', 100.0, 1.0),
                            ('b', 100.0 * ratio, 1.0 / cpu)):
      rows.append({'variant': variant, 'pair': pair, 'side': side,
                   'ok': True, 'images_per_sec': ips,
                   'cpu_seconds_per_image': cost, 'other_cpu_share': 0.0,
                   'reruns': 0, 'halves_log_ratio': halves,
                   'seconds': seconds + pair})
  return rows


def test_figures_are_the_pairs_spreads_with_their_interval_and_levene():
  noisy = [1.1, 0.9, 1.05, 0.95, 1.2, 0.85]
  quiet = [1.01, 0.99, 1.005, 0.995, 1.02, 0.985]
  rows = pd.DataFrame(_rows('default', noisy) +
                      _rows('no_aslr', quiet, cpu_ratios=[1.0] * 6,
                            seconds=20.0))
  table = noise_sources.figures(rows)
  # What a run cost: the median of its 12 runs' seconds (11 to 16, and 21
  # to 26).
  assert table['default']['median_run_seconds'] == 13.5
  assert table['no_aslr']['median_run_seconds'] == 23.5
  logs = np.log(noisy)
  sd = float(np.std(logs, ddof=1))
  assert table['default']['pairs'] == 6
  assert table['default']['pair_sd'] == round(sd, 4)
  low, high = table['default']['pair_sd_95']
  assert low == round(sd * math.sqrt(5 / scipy.stats.chi2.ppf(0.975, 5)), 4)
  assert low < sd < high
  # CPU seconds per image moved as throughput did for default, not at all
  # for no_aslr.
  assert table['default']['cpu_pair_sd'] == round(sd, 4)
  assert table['no_aslr']['cpu_pair_sd'] == 0.0
  assert table['no_aslr']['levene_p_vs_default'] == round(float(
      scipy.stats.levene(np.log(quiet), logs).pvalue), 4)
  assert table['no_aslr']['levene_p_vs_default'] < 0.05
  assert table['default']['levene_p_vs_default'] is None
  assert table['no_aslr']['caught_by_10_pairs_pct'] < table['default'][
      'caught_by_10_pairs_pct']


def test_a_longer_variant_runs_its_multiple_of_the_target(tmp_path):
  runs = noise_sources.plan(['default', 'runs_2x', 'runs_4x'], 1,
                            ['--model=trivial'], '/usr/bin/python3',
                            str(tmp_path), target_seconds=5.0)
  assert {(r.name, r.target_seconds) for r in runs} == {
      ('default', None), ('runs_2x', 10.0), ('runs_4x', 20.0)}
  # Without a target the runs are not calibrated: nothing to multiply.
  runs = noise_sources.plan(['runs_4x'], 1, ['--model=trivial'],
                            '/usr/bin/python3', str(tmp_path))
  assert {r.target_seconds for r in runs} == {None}


def test_the_study_hands_its_target_to_the_plan_and_the_runner(tmp_path,
                                                              monkeypatch):
  """Without it runs_4x would run the default's 5 s and be called longer."""
  planned = {}

  class Planned(Exception):
    pass

  def run_all(runs, folder, python, noise):
    del folder, python
    planned.update(runs=runs, noise=noise)
    raise Planned()
  monkeypatch.setattr(noise_sources.runner, 'run_all', run_all)
  with pytest.raises(Planned):
    noise_sources.main(['--pairs', '3', '--variants', 'default,runs_4x',
                        '--target_seconds', '2', '--work_dir', str(tmp_path),
                        '--output', str(tmp_path / 'figures.json')])
  assert {(r.name, r.target_seconds) for r in planned['runs']} == {
      ('default', None), ('runs_4x', 8.0)}
  assert planned['noise'].target_seconds == 2.0
