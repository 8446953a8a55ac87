"""results.stats on synthetic samples whose answer is known."""

import itertools
import math

import numpy as np
import pytest
import scipy.stats

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


# -- the paired test (runs taken in interleaved pairs) ----------------------

def _pairs(rng, change, pairs=10, drift_sd=0.05, noise_sd=0.005):
  """Throughputs of interleaved pairs: each round drifts the machine (both
  runs of the pair alike) by drift_sd; each run adds its own noise_sd; the
  candidate is `change` (a fraction) faster."""
  drift = np.exp(rng.normal(0.0, drift_sd, pairs))
  baseline = 1000.0 * drift * np.exp(rng.normal(0.0, noise_sd, pairs))
  candidate = (1000.0 * (1 + change) * drift
               * np.exp(rng.normal(0.0, noise_sd, pairs)))
  return baseline, candidate


def test_signed_rank_null_distribution_matches_enumeration():
  for n in (1, 2, 5, 8):
    counts = stats._null_signed_rank_counts(n)
    enumerated = np.zeros(n * (n + 1) // 2 + 1)
    for signs in itertools.product((0, 1), repeat=n):
      enumerated[sum(rank for rank, up in zip(range(1, n + 1), signs)
                     if up)] += 1
    np.testing.assert_array_equal(counts, enumerated)


@pytest.mark.parametrize('n', [6, 11, 30])
def test_scipy_wilcoxon_p_agrees_with_our_null_distribution(n):
  # As for Mann-Whitney: the interval's critical count is ours, the p-value
  # scipy's, so both must come from one distribution.
  rng = np.random.default_rng(n)
  cdf = np.cumsum(stats._null_signed_rank_counts(n)) / 2.0 ** n
  for _ in range(20):
    d = rng.normal(0.3, 1.0, n)
    _, _, _, p_value, smallest_p, method = stats.wilcoxon_signed_rank(d)
    assert method == 'exact'
    ranks = scipy.stats.rankdata(np.abs(d))
    t_plus = int(ranks[d > 0].sum())
    total = n * (n + 1) // 2
    assert p_value == pytest.approx(
        min(1.0, 2 * cdf[min(t_plus, total - t_plus)]), rel=1e-9, abs=0)
    assert smallest_p == pytest.approx(2 / 2 ** n, rel=1e-9, abs=0)


def test_known_small_paired_case():
  # Six pairs, every candidate slower: the smallest p there is, 2 / 2**6;
  # the estimate is the median of the 21 Walsh averages of the log ratios.
  baseline = [100.0, 120.0, 90.0, 110.0, 105.0, 95.0]
  ratios = [0.90, 0.91, 0.92, 0.93, 0.94, 0.95]
  candidate = [b * r for b, r in zip(baseline, ratios)]
  result = stats.compare_throughput(baseline, candidate, paired=True)
  assert result.test == stats.PAIRED_TEST and result.paired
  assert result.method == 'exact'
  assert result.p_value == pytest.approx(2 / 64)
  d = np.log(ratios)
  walsh = [(d[i] + d[j]) / 2 for i in range(6) for j in range(i, 6)]
  assert result.change_pct == pytest.approx(100 * np.expm1(np.median(walsh)))
  # c = 0 (P(T+ <= 0) = 1/64 <= 0.025 < P(T+ <= 1)): the extreme averages.
  assert result.change_pct_low == pytest.approx(100 * np.expm1(d[0]))
  assert result.change_pct_high == pytest.approx(100 * np.expm1(d[-1]))
  assert result.verdict == stats.REGRESSION
  # Five pairs cannot reach 0.05 at all.
  five = stats.compare_throughput(baseline[:5], candidate[:5], paired=True)
  assert five.smallest_possible_p == pytest.approx(2 / 32)
  assert five.verdict == stats.INCONCLUSIVE


def test_paired_test_sees_through_drift_that_hides_it_from_mann_whitney():
  """The machine drifts 5% from round to round, a 3% slowdown hides in it
  for the unpaired test; the pairs' ratios cancel the drift."""
  rng = np.random.default_rng(27)
  paired_caught = unpaired_caught = 0
  for _ in range(100):
    baseline, candidate = _pairs(rng, -0.03)
    paired = stats.compare_throughput(baseline, candidate, paired=True)
    unpaired = stats.compare_throughput(baseline, candidate)
    assert unpaired.test == stats.UNPAIRED_TEST
    paired_caught += paired.verdict == stats.REGRESSION
    unpaired_caught += unpaired.verdict == stats.REGRESSION
  assert paired_caught >= 95 and unpaired_caught <= 20
  baseline, candidate = _pairs(rng, -0.03)
  result = stats.compare_throughput(baseline, candidate, paired=True)
  assert result.change_pct_low < -3 < result.change_pct_high


def test_paired_false_alarms_stay_within_alpha_and_interval_agrees():
  rng = np.random.default_rng(2027)
  draws, verdicts = 500, []
  for _ in range(draws):
    result = stats.compare_throughput(*_pairs(rng, 0.0, noise_sd=0.02),
                                      paired=True, min_effect_pct=0.0)
    excludes_zero = result.change_pct_high < 0 or result.change_pct_low > 0
    assert excludes_zero == (result.p_value < ALPHA)
    verdicts.append(result.verdict)
  assert sum(v != stats.NO_CHANGE for v in verdicts) / draws <= (
      ALPHA + FALSE_ALARM_MARGIN)


def test_paired_normal_approximation_with_ties():
  rng = np.random.default_rng(4)
  baseline, candidate = _pairs(rng, -0.06, pairs=80)
  candidate = np.round(candidate, -1)   # rounding makes ties (and zeros)
  baseline = np.round(baseline, -1)
  result = stats.compare_throughput(baseline, candidate, paired=True)
  assert result.method == 'normal' and result.verdict == stats.REGRESSION
  assert result.change_pct_low < -6 < result.change_pct_high
  # Every ratio zero: no ordering at all, so no evidence either way.
  same = stats.compare_throughput(baseline, baseline, paired=True)
  assert same.p_value == same.smallest_possible_p == 1.0
  assert same.verdict == stats.INCONCLUSIVE


@pytest.mark.parametrize('alpha', [0.05, 0.01, 0.2])
def test_fewest_pairs_is_the_first_count_that_can_reach_alpha(alpha):
  n = stats.fewest_runs(alpha, paired=True)
  def best_p(count):   # every pair the same way round, no two alike
    ranks = np.arange(1, count + 1)
    return stats.compare_throughput(ranks * 10.0, ranks * (9.0 - 0.01 * ranks),
                                    paired=True).p_value
  assert best_p(n) < alpha <= best_p(n - 1)
  assert stats.fewest_runs(0.05, paired=True) == 6


# -- a family of configurations: Holm ---------------------------------------

def test_holm_adjusts_as_by_hand():
  # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04,
  # kept non-decreasing: 0.02, 0.03, 0.06, 0.06; back in the given order.
  np.testing.assert_allclose(stats.holm([0.01, 0.04, 0.03, 0.005]),
                             [0.03, 0.06, 0.06, 0.02])
  np.testing.assert_allclose(stats.holm([0.5, 0.9]), [1.0, 1.0])
  np.testing.assert_allclose(stats.holm([0.02]), [0.02])


FAMILY_SIZE = 5
FAMILY_TRIALS = 2000


def _family_regression_rates(rng):
  """Over FAMILY_TRIALS comparisons of FAMILY_SIZE unchanged
  configurations (10 interleaved pairs each, 5% run-to-run noise, so the
  2% threshold hardly filters): how often is any configuration called a
  regression, raw and after Holm?"""
  raw = adjusted = 0
  for _ in range(FAMILY_TRIALS):
    results = [stats.compare_throughput(
        *_pairs(rng, 0.0, drift_sd=0.0, noise_sd=0.05), paired=True)
               for _ in range(FAMILY_SIZE)]
    raw += any(r.verdict == stats.REGRESSION for r in results)
    adjusted += any(r.verdict == stats.REGRESSION
                    for r in stats.judge_family(results))
  return raw / FAMILY_TRIALS, adjusted / FAMILY_TRIALS


def test_family_false_alarms_stay_within_alpha_with_holm():
  raw, adjusted = _family_regression_rates(np.random.default_rng(27))
  # Three binomial standard errors of a rate of alpha over the trials.
  bound = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / FAMILY_TRIALS)
  report = 'any regression: raw %.4f, Holm %.4f, bound %.4f' % (
      raw, adjusted, bound)
  print(report)
  assert adjusted <= bound, report
  # Without the adjustment the same draws cry wolf over the bound: the
  # test above can tell the two apart.
  assert raw > bound, report


def test_family_verdicts_follow_the_adjusted_p():
  separated = stats.compare_throughput([100.0] * 6, [90, 91, 92, 93, 94, 95],
                                       paired=True)    # p = 2/64 = 0.031
  unchanged = stats.compare_throughput([100.0, 101, 99, 100.5, 99.5, 100.2],
                                       [100.1, 100.9, 99.2, 100.4, 99.4, 100.3],
                                       paired=True)
  assert separated.verdict == stats.REGRESSION
  judged = stats.judge_family([separated, unchanged])
  assert judged[0].p_value == separated.p_value           # raw kept
  assert judged[0].p_adjusted == pytest.approx(2 * 2 / 64)
  # 2 x 0.031 > alpha, and no outcome of 6 pairs could do better: too few.
  assert judged[0].verdict == stats.INCONCLUSIVE
  assert judged[1].verdict == stats.INCONCLUSIVE
  # Alone it is its own family: nothing changes.
  (alone,) = stats.judge_family([separated])
  assert alone.verdict == stats.REGRESSION
  assert alone.p_adjusted == separated.p_value


# -- power from the observed spread -----------------------------------------

@pytest.mark.parametrize('paired', [True, False])
def test_runs_for_a_change_catch_it_at_the_stated_power(paired):
  """The analytic run count for a 5% slowdown, checked by simulation: the
  real test catches it in about POWER of the draws at that count, and the
  detectable change at that count is at most 5%."""
  spread = 0.06
  n = stats.runs_for_change(spread, 5.0, paired)
  assert stats.detectable_slowdown_pct(spread, n, n, paired) <= 5.0
  assert stats.detectable_slowdown_pct(spread, n - 1, n - 1, paired) > 5.0
  rng = np.random.default_rng(5)
  caught = 0
  for _ in range(300):
    if paired:
      baseline = np.full(n, 1000.0)
      candidate = 950.0 * np.exp(rng.normal(0.0, spread, n))
    else:
      baseline = 1000.0 * np.exp(rng.normal(0.0, spread, n))
      candidate = 950.0 * np.exp(rng.normal(0.0, spread, n))
    caught += stats.compare_throughput(
        baseline, candidate, paired=paired,
        min_effect_pct=0.0).verdict == stats.REGRESSION
  assert 0.7 <= caught / 300 <= 0.95, (n, caught)


def test_power_answers_without_a_spread_or_enough_runs():
  assert math.isnan(stats.detectable_slowdown_pct(math.nan, 10, 10, True))
  # 5 pairs can never reach p < 0.05, whatever the spread.
  assert math.isnan(stats.detectable_slowdown_pct(0.01, 5, 5, True))
  assert stats.runs_for_change(math.nan, 5.0, True) == 6
  assert stats.runs_for_change(math.nan, 5.0, False) == 4
  # A family of 5: a lone change must reach 0.01, which takes 8 pairs.
  assert stats.runs_for_change(math.nan, 5.0, True, level=0.01) == 8
  assert math.isnan(stats.log_spread([100.0], [90.0], paired=True))
  assert stats.log_spread([100.0, 110.0], [90.0, 99.0], paired=True) == (
      pytest.approx(0.0, abs=1e-12))
