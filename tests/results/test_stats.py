"""results.stats on synthetic samples whose answer is known."""

import itertools
import math

import numpy as np
import pytest

from results import stats

ALPHA = stats.DEFAULT_ALPHA
FALSE_ALARM_MARGIN = 0.02
RUNS_PER_GROUP = 10
NOISE_SD = 0.02


def _draw(rng, mean, size=RUNS_PER_GROUP, sd=NOISE_SD):
  return mean * (1.0 + rng.normal(0.0, sd, size))


def test_exact_null_distribution_matches_enumeration():
  for m, n in [(1, 1), (2, 5), (4, 4), (3, 6)]:
    counts = stats._null_u_counts(m, n)
    enumerated = np.zeros(m * n + 1)
    for x_positions in itertools.combinations(range(m + n), m):
      y_positions = set(range(m + n)) - set(x_positions)
      enumerated[sum(x > y for x in x_positions for y in y_positions)] += 1
    np.testing.assert_array_equal(counts, enumerated)
    assert counts.sum() == math.comb(m + n, m)


def test_known_small_case():
  # Complete separation of 4 vs 4: p = 2 / C(8, 4).
  result = stats.compare_throughput([100, 101, 102, 103], [90, 91, 92, 93])
  assert result.method == 'exact'
  assert result.p_value == pytest.approx(2 / 70)
  assert result.verdict == stats.REGRESSION
  assert -12 < result.change_pct < -8


def test_five_percent_slowdown_is_a_regression():
  rng = np.random.default_rng(1234)
  baseline, candidate = _draw(rng, 1000.0), _draw(rng, 950.0)
  result = stats.compare_throughput(baseline, candidate)
  assert result.verdict == stats.REGRESSION
  assert result.change_pct_low < -5 < result.change_pct_high
  # Power over many draws, not just one lucky seed.
  detected = sum(
      stats.compare_throughput(_draw(rng, 1000.0), _draw(rng, 950.0)).verdict
      == stats.REGRESSION for _ in range(200))
  assert detected / 200 >= 0.95


def test_five_percent_speedup_is_an_improvement():
  rng = np.random.default_rng(99)
  result = stats.compare_throughput(_draw(rng, 1000.0), _draw(rng, 1050.0))
  assert result.verdict == stats.IMPROVEMENT


def test_false_alarm_rate_under_the_null_is_within_alpha():
  rng = np.random.default_rng(2024)
  draws = 500
  verdicts = [stats.compare_throughput(_draw(rng, 1000.0),
                                       _draw(rng, 1000.0)).verdict
              for _ in range(draws)]
  false_alarms = sum(v != stats.NO_CHANGE for v in verdicts) / draws
  false_regressions = verdicts.count(stats.REGRESSION) / draws
  report = 'false alarms %.3f, false regressions %.3f' % (
      false_alarms, false_regressions)
  print(report)
  assert false_alarms <= ALPHA + FALSE_ALARM_MARGIN, report
  assert false_regressions <= ALPHA / 2 + FALSE_ALARM_MARGIN, report


def test_test_without_effect_threshold_keeps_its_level():
  # With min_effect 0 the verdict is the bare test: rejection rate ~ alpha.
  rng = np.random.default_rng(7)
  draws = 500
  rejected = sum(
      stats.compare_throughput(_draw(rng, 1000.0), _draw(rng, 1000.0),
                               min_effect_pct=0.0).verdict != stats.NO_CHANGE
      for _ in range(draws)) / draws
  assert rejected <= ALPHA + FALSE_ALARM_MARGIN


def test_small_effect_below_threshold_is_no_change():
  rng = np.random.default_rng(5)
  baseline = _draw(rng, 1000.0, size=25, sd=0.002)
  candidate = _draw(rng, 990.0, size=25, sd=0.002)
  result = stats.compare_throughput(baseline, candidate)
  assert result.p_value < ALPHA            # real, but only -1%
  assert result.verdict == stats.NO_CHANGE


def test_too_few_runs_is_inconclusive():
  result = stats.compare_throughput([100, 101, 102], [80, 81, 82])
  assert result.smallest_possible_p == pytest.approx(0.1)
  assert result.verdict == stats.INCONCLUSIVE
  assert math.isnan(result.change_pct_low)


def test_confidence_interval_agrees_with_test():
  rng = np.random.default_rng(11)
  for _ in range(100):
    result = stats.compare_throughput(_draw(rng, 1000.0), _draw(rng, 985.0))
    excludes_zero = result.change_pct_high < 0 or result.change_pct_low > 0
    assert excludes_zero == (result.p_value < ALPHA)


def test_normal_approximation_with_ties_and_large_samples():
  rng = np.random.default_rng(3)
  baseline = np.round(_draw(rng, 1000.0, size=300), 0)   # rounding makes ties
  candidate = np.round(_draw(rng, 940.0, size=300), 0)
  result = stats.compare_throughput(baseline, candidate)
  assert result.method == 'normal'
  assert result.verdict == stats.REGRESSION
  assert result.change_pct_low < -6 < result.change_pct_high
  same = stats.compare_throughput(baseline, baseline)
  assert same.p_value == pytest.approx(1.0)
  assert same.verdict == stats.NO_CHANGE


@pytest.mark.parametrize('m, n', [(3, 4), (9, 12), (25, 25)])
def test_scipy_p_value_agrees_with_our_null_distribution(m, n):
  # Our exact counts still set the interval's critical count, so scipy's
  # p-value (the verdict) must come from the same distribution, beyond
  # scipy's own 'auto' limit of 8 samples a group too.
  rng = np.random.default_rng(m * 100 + n)
  for _ in range(20):
    x, y = rng.normal(0, 1, m), rng.normal(0.5, 1, n)
    _, _, _, p_value, smallest_p, method = stats.mann_whitney(x, y)
    assert method == 'exact'
    cdf = stats._exact_cdf(m, n)
    u = int(np.sum(np.subtract.outer(y, x) > 0))
    assert p_value == pytest.approx(min(1.0, 2 * cdf[min(u, m * n - u)]),
                                    rel=1e-9, abs=0)
    assert smallest_p == pytest.approx(2 / math.comb(m + n, m), rel=1e-9,
                                       abs=0)


@pytest.mark.parametrize('x, y', [
    (np.arange(5.0), np.arange(5.0, 12.0)),                  # exact
    (np.arange(30.0), np.arange(30.0, 70.0)),                # normal
    (np.repeat(np.arange(10.0), 3), np.repeat(np.arange(20.0, 30.0), 4)),
])
def test_smallest_possible_p_is_scipys_p_of_complete_separation(x, y):
  # smallest_possible_p is ours (it decides `inconclusive`); for completely
  # separated samples scipy's p-value is that smallest p.
  _, _, _, p_value, smallest_p, _ = stats.mann_whitney(x, y)
  assert smallest_p == pytest.approx(p_value, rel=1e-9, abs=0)
  _, _, _, p_value, smallest_p, _ = stats.mann_whitney(y, x)
  assert smallest_p == pytest.approx(p_value, rel=1e-9, abs=0)


def test_all_values_tied_gives_no_evidence():
  _, low, high, p_value, smallest_p, method = stats.mann_whitney(
      [1.0] * 30, [1.0] * 30)
  assert method == 'normal'
  assert p_value == smallest_p == 1.0
  assert low == high == 0.0


@pytest.mark.parametrize('alpha', [0.05, 0.01, 0.2])
def test_fewest_runs_is_the_first_count_that_can_reach_alpha(alpha):
  n = stats.fewest_runs(alpha)
  def best_p(count):   # fully separated groups: the smallest p there is
    return stats.compare_throughput(range(1, count + 1),
                                    range(count + 1, 2 * count + 1)).p_value
  assert best_p(n) < alpha <= best_p(n - 1)
