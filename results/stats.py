"""Is the candidate slower than the baseline? Distribution-free.

Method (chosen over a bootstrap because it is exact for the small run counts
benchmarks have, deterministic, and its interval agrees with its test):

* Throughputs are compared on the log scale, so a shift is a ratio:
  d = log(candidate) - log(baseline). The sample is the run (one process);
  steps of one process are not independent and never a sample here.
* Test, by the design of the runs:
  - paired (runs taken in interleaved pairs, one of each side per round):
    two-sided Wilcoxon signed-rank test on the pairs' log ratios
    (scipy.stats.wilcoxon). Exact null distribution up to EXACT_MAX_PAIRS
    pairs without ties or zero ratios, else the normal approximation with
    tie and continuity correction.
  - unpaired: two-sided Mann-Whitney U on the log samples
    (scipy.stats.mannwhitneyu). Exact null distribution when both groups
    have at most EXACT_MAX_SIZE samples and there are no ties; otherwise the
    normal approximation with tie correction and continuity correction.
* Estimate: the Hodges-Lehmann shift, reported as % change =
  100 * (exp(d) - 1): paired, the median of the Walsh averages
  (d_i + d_j) / 2, i <= j, of the pairs' log ratios; unpaired, the median of
  all pairwise differences d_ij.
* Confidence interval, from the same null distribution as the test: with
  the M Walsh averages (paired) or m*n differences (unpaired) sorted,
  [D_(c+1), D_(M-c)] where c is the largest count with P(T <= c) <= alpha/2
  (Tukey's interval for the signed-rank test, Moses' for Mann-Whitney). It
  excludes 0 exactly when the test rejects at alpha, so the table never
  shows a "significant" change whose interval straddles zero.
* Verdict: `regression` when p < alpha AND the estimate is at most
  -min_effect_pct; `improvement` when p < alpha AND it is at least
  +min_effect_pct; `inconclusive` when the sample sizes cannot reach p < alpha
  at all (e.g. 3 runs against 3: the smallest two-sided p is 0.1; 5 pairs:
  0.0625); otherwise `no change`.
* Several configurations compared at once are one family: Holm's step-down
  adjustment (judge_family) keeps the chance of any false verdict among
  them at or below alpha; the verdicts follow the adjusted p-values, and
  `inconclusive` then means even this configuration's smallest possible p,
  adjusted alongside the others' p-values, would not reach alpha.
  Intervals stay per configuration (1 - alpha), unadjusted.
* Power, analytically (detectable_slowdown_pct, runs_for_change): the normal
  approximation on log ratios, z = z(1 - level/2) + z(POWER), the standard
  error of the mean log ratio from the observed spread (sd of the pairs' log
  ratios, or the pooled within-group sd of log throughput), with the run
  count scaled by RANK_TEST_EFFICIENCY. level = alpha / k for a family of k:
  what a lone change must reach under Holm.

False alarms: with no real difference the test rejects in at most alpha of
comparisons (two-sided, so at most alpha/2 are called regressions), and the
effect threshold only lowers that. tests/results/test_stats.py measures it
over 500 seeded draws of 10 runs against 10 runs (noise sd 2%): the rate of
any verdict other than `no change` must stay at or below alpha + 0.02.
Measured: 1.4% (1.0% called regressions) with the default 2% threshold; over
5000 draws 1.7% (0.9% regressions); the bare test without a threshold 4.1%.
Over a family of 5 unchanged configurations (10 interleaved pairs each, 5%
run-to-run noise, 2000 seeded comparisons; test_stats.py::
test_family_false_alarms_stay_within_alpha_with_holm) any configuration was
called a regression in 2.5% of comparisons with Holm, 10.6% without.
"""

import dataclasses
import functools
import math

import numpy as np
import scipy.stats

DEFAULT_ALPHA = 0.05
DEFAULT_MIN_EFFECT_PCT = 2.0
# Exact counts fit float64 exactly while C(m+n, m) < 2**53 (m = n = 25: 1.3e14).
EXACT_MAX_SIZE = 25
# The signed-rank null distribution has 2**n orderings: exact in float64 up
# to n = 52; scipy's own 'auto' switches to the normal approximation past 50.
EXACT_MAX_PAIRS = 50
# Pairwise differences grow as m*n; longer sample lists are thinned evenly.
MAX_SAMPLES_PER_GROUP = 2000
# Power the detectable change is quoted at (the usual planning convention).
POWER = 0.8
# A rank test needs 1 / (3/pi) = 1.05 times the runs of a t-test for the
# same power under normal noise (its asymptotic relative efficiency).
RANK_TEST_EFFICIENCY = 3.0 / math.pi

REGRESSION = 'regression'
IMPROVEMENT = 'improvement'
NO_CHANGE = 'no change'
INCONCLUSIVE = 'inconclusive'

PAIRED_TEST = 'paired Wilcoxon'
UNPAIRED_TEST = 'Mann-Whitney'


@dataclasses.dataclass(frozen=True)
class ShiftComparison:
  """Candidate against baseline; change_pct < 0 means the candidate is slower."""
  n_baseline: int
  n_candidate: int
  baseline_median: float
  candidate_median: float
  change_pct: float
  change_pct_low: float    # confidence interval at 1 - alpha; nan if unbounded
  change_pct_high: float
  p_value: float           # the test's own (raw) p-value
  smallest_possible_p: float
  method: str              # 'exact' or 'normal'
  verdict: str             # from p_adjusted (judge_family), else from p_value
  test: str = UNPAIRED_TEST   # PAIRED_TEST or UNPAIRED_TEST
  # sd of what the test compares, on the log scale: the pairs' log ratios
  # (paired) or log throughput pooled within the groups; nan if unknown.
  spread: float = math.nan
  # Holm-adjusted over the comparison's configurations (judge_family); the
  # raw p-value while the comparison is judged alone.
  p_adjusted: float = math.nan

  @property
  def paired(self):
    return self.test == PAIRED_TEST


@functools.lru_cache(maxsize=256)
def _null_u_counts(m, n):
  """counts[u] = number of orderings of m x's and n y's with U = u.

  scipy keeps its exact distribution private; the interval needs its
  critical count, so it is counted here too.

  U counts pairs (x, y) with x > y. Look at the largest of all m + n values:
  an x beats all n y's (U grows by n, sizes become m-1, n); a y beats
  nothing (sizes m, n-1). So N(u; m, n) = N(u - n; m - 1, n) + N(u; m, n - 1).
  """
  previous_row = [np.ones(1) for _ in range(n + 1)]   # m = 0: U is always 0
  for i in range(1, m + 1):
    row = [np.ones(1)]                                 # n = 0: U is always 0
    for j in range(1, n + 1):
      counts = np.zeros(i * j + 1)
      from_x_largest = previous_row[j]
      counts[j:j + len(from_x_largest)] += from_x_largest
      from_y_largest = row[j - 1]
      counts[:len(from_y_largest)] += from_y_largest
      row.append(counts)
    previous_row = row
  counts = previous_row[n]
  counts.setflags(write=False)
  return counts


@functools.lru_cache(maxsize=64)
def _null_signed_rank_counts(n):
  """counts[t] = number of sign patterns of ranks 1..n whose positive ranks
  sum to t (the signed-rank statistic T+ under the null; scipy keeps this
  distribution private too). Each rank r is either negative (T+ unchanged)
  or positive (T+ grows by r)."""
  counts = np.ones(1)
  for rank in range(1, n + 1):
    grown = np.zeros(len(counts) + rank)
    grown[:len(counts)] += counts
    grown[rank:] += counts
    counts = grown
  counts.setflags(write=False)
  return counts


def _exact_cdf(m, n):
  counts = _null_u_counts(m, n)
  return np.cumsum(counts) / counts.sum()


def _exact_bounds(counts, alpha):
  """(smallest two-sided p, critical count c) of an exact null
  distribution: c is the largest count with P(T <= c) <= alpha / 2, -1 if
  none."""
  cdf = np.cumsum(counts) / counts.sum()
  below = np.nonzero(cdf <= alpha / 2.0)[0]
  return (min(1.0, 2.0 * float(cdf[0])),
          int(below[-1]) if len(below) else -1)


def _normal_bounds(total, sd, alpha):
  """The same from the normal approximation of a statistic ranging over
  0..total with mean total / 2 and this sd (continuity-corrected)."""
  # All values tied: no ordering at all, so no evidence either way.
  smallest_p = (2.0 * float(scipy.stats.norm.sf((total / 2.0 - 0.5) / sd))
                if sd > 0 else 1.0)
  z = float(scipy.stats.norm.isf(alpha / 2.0))
  return smallest_p, int(math.floor(total / 2.0 - 0.5 - z * sd))


def _interval(sorted_values, critical):
  """[D_(c+1), D_(M-c)] of the sorted estimates; unbounded when c < 0."""
  if critical < 0:
    return -math.inf, math.inf
  return (float(sorted_values[critical]),
          float(sorted_values[len(sorted_values) - 1 - critical]))


def _tie_corrected_variance(m, n, pooled):
  total = m + n
  _, tie_sizes = np.unique(pooled, return_counts=True)
  tie_term = float(np.sum(tie_sizes ** 3 - tie_sizes))
  return m * n / 12.0 * ((total + 1) - tie_term / (total * (total - 1)))


def _thin(samples):
  if len(samples) <= MAX_SAMPLES_PER_GROUP:
    return samples
  keep = np.linspace(0, len(samples) - 1, MAX_SAMPLES_PER_GROUP).round()
  return samples[keep.astype(int)]


def mann_whitney(baseline, candidate, alpha=DEFAULT_ALPHA):
  """Two-sided Mann-Whitney test plus the Hodges-Lehmann shift and its CI.

  Works on the values as given (compare_throughput passes logs).
  Returns (shift, shift_low, shift_high, p_value, smallest_possible_p, method).
  """
  x = _thin(np.sort(np.asarray(baseline, dtype=float)))
  y = _thin(np.sort(np.asarray(candidate, dtype=float)))
  m, n = len(x), len(y)
  if m == 0 or n == 0:
    raise ValueError('both groups need at least one sample')
  differences = np.sort(np.subtract.outer(y, x).ravel())
  pooled = np.concatenate([x, y])
  exact = (max(m, n) <= EXACT_MAX_SIZE
           and len(np.unique(pooled)) == m + n)
  # The method is ours, not scipy's 'auto' (exact only up to 8 samples a
  # group): the p-value has to come from the same null distribution as the
  # interval's critical count below, or interval and verdict could disagree.
  p_value = float(scipy.stats.mannwhitneyu(
      y, x, use_continuity=True, alternative='two-sided',
      method='exact' if exact else 'asymptotic').pvalue)
  if exact:
    smallest_p, critical = _exact_bounds(_null_u_counts(m, n), alpha)
  else:
    sd = math.sqrt(max(_tie_corrected_variance(m, n, pooled), 0.0))
    smallest_p, critical = _normal_bounds(m * n, sd, alpha)
  low, high = _interval(differences, critical)
  return (float(np.median(differences)), low, high, p_value, smallest_p,
          'exact' if exact else 'normal')


def _signed_rank_sd(nonzero):
  """sd of T+ under the null with ties among |d| (scipy's formula)."""
  count = len(nonzero)
  _, tie_sizes = np.unique(np.abs(nonzero), return_counts=True)
  tie_term = float(np.sum(tie_sizes ** 3 - tie_sizes))
  return math.sqrt(max(count * (count + 1) * (2 * count + 1)
                       - tie_term / 2.0, 0.0) / 24.0)


def wilcoxon_signed_rank(log_ratios, alpha=DEFAULT_ALPHA):
  """Two-sided Wilcoxon signed-rank test of paired log ratios, plus the
  Hodges-Lehmann shift (median of the Walsh averages) and its interval.

  Returns (shift, shift_low, shift_high, p_value, smallest_possible_p,
  method), as mann_whitney does.
  """
  d = np.sort(np.asarray(log_ratios, dtype=float))
  if len(d) == 0:
    raise ValueError('a paired test needs at least one pair')
  rows, columns = np.triu_indices(len(d))
  walsh = np.sort((d[rows] + d[columns]) / 2.0)
  nonzero = d[d != 0]
  # Zero ratios are dropped (Wilcoxon's own rule, scipy's default); ties
  # among the rest make the exact distribution wrong, as for Mann-Whitney.
  exact = (0 < len(nonzero) == len(d) <= EXACT_MAX_PAIRS
           and len(np.unique(np.abs(d))) == len(d))
  if exact:
    smallest_p, critical = _exact_bounds(_null_signed_rank_counts(len(d)),
                                         alpha)
  else:
    count = len(nonzero)
    smallest_p, critical = _normal_bounds(count * (count + 1) / 2.0,
                                          _signed_rank_sd(nonzero), alpha)
  p_value = (float(scipy.stats.wilcoxon(
      d, alternative='two-sided', correction=True,
      method='exact' if exact else 'asymptotic').pvalue)
             if len(nonzero) else 1.0)
  low, high = _interval(walsh, critical)
  return (float(np.median(walsh)), low, high, p_value, smallest_p,
          'exact' if exact else 'normal')


def fewest_runs(alpha=DEFAULT_ALPHA, paired=False):
  """The fewest runs a side (n against n, or n pairs) with which the test
  can reach p < alpha at all: the smallest two-sided exact p is 2 / C(2n, n)
  unpaired, so 4 at alpha = 0.05 (3 against 3 can never do better than
  0.1), and 2 / 2**n paired, so 6 pairs (5 pairs: 0.0625)."""
  def smallest_p(n):
    return 2.0 / (2 ** n if paired else math.comb(2 * n, n))
  n = 1
  while smallest_p(n) >= alpha:
    n += 1
  return n


def _to_pct(log_ratio):
  if math.isinf(log_ratio):
    return math.nan
  return 100.0 * math.expm1(log_ratio)


def decide(p_value, change_pct, smallest_possible_p, alpha, min_effect_pct):
  """The verdict rule documented in the module docstring."""
  if smallest_possible_p >= alpha:
    return INCONCLUSIVE
  if p_value < alpha and change_pct <= -min_effect_pct:
    return REGRESSION
  if p_value < alpha and change_pct >= min_effect_pct:
    return IMPROVEMENT
  return NO_CHANGE


def log_spread(baseline, candidate, paired):
  """The sd (log scale) the test's power depends on: of the pairs' log
  ratios, or of log throughput pooled within the two groups; nan when too
  few runs show any spread."""
  x, y = np.log(np.asarray(baseline, float)), np.log(np.asarray(candidate,
                                                                float))
  if paired:
    return float(np.std(y - x, ddof=1)) if len(x) >= 2 else math.nan
  freedom = len(x) + len(y) - 2
  if freedom < 1:
    return math.nan
  squares = np.sum((x - x.mean()) ** 2) + np.sum((y - y.mean()) ** 2)
  return math.sqrt(float(squares) / freedom)


def compare_throughput(baseline, candidate, alpha=DEFAULT_ALPHA,
                       min_effect_pct=DEFAULT_MIN_EFFECT_PCT, paired=False):
  """Compares two samples of throughput (images/sec; higher is better).

  paired: baseline[i] and candidate[i] were run as a pair (the same round
  of an interleaved plan), so the paired test judges their log ratios.
  """
  baseline = np.asarray(baseline, dtype=float)
  candidate = np.asarray(candidate, dtype=float)
  if np.any(baseline <= 0) or np.any(candidate <= 0):
    raise ValueError('throughputs must be positive')
  if paired and len(baseline) != len(candidate):
    raise ValueError('paired samples need the same length')
  if paired:
    estimate = wilcoxon_signed_rank(np.log(candidate) - np.log(baseline),
                                    alpha)
  else:
    estimate = mann_whitney(np.log(baseline), np.log(candidate), alpha)
  shift, low, high, p_value, smallest_p, method = estimate
  change = _to_pct(shift)
  return ShiftComparison(
      n_baseline=len(baseline), n_candidate=len(candidate),
      baseline_median=float(np.median(baseline)),
      candidate_median=float(np.median(candidate)),
      change_pct=change, change_pct_low=_to_pct(low),
      change_pct_high=_to_pct(high), p_value=p_value,
      smallest_possible_p=smallest_p, method=method,
      verdict=decide(p_value, change, smallest_p, alpha, min_effect_pct),
      test=PAIRED_TEST if paired else UNPAIRED_TEST,
      spread=log_spread(baseline, candidate, paired), p_adjusted=p_value)


def holm(p_values):
  """Holm's step-down adjusted p-values, in the order given: the i-th
  smallest p times (m - i + 1), kept non-decreasing, at most 1 (Holm 1979;
  statsmodels' multipletests(method='holm'), not a dependency here)."""
  p = np.asarray(p_values, dtype=float)
  order = np.argsort(p, kind='stable')
  scaled = (len(p) - np.arange(len(p))) * p[order]
  adjusted = np.empty(len(p))
  adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
  return adjusted


def judge_family(results, alpha=DEFAULT_ALPHA,
                 min_effect_pct=DEFAULT_MIN_EFFECT_PCT):
  """The results (ShiftComparison, one per configuration of one
  comparison) judged as one family: each gets its Holm-adjusted p and the
  verdict by it. A result is `inconclusive` when even its smallest
  possible p, adjusted alongside the others' actual p-values, stays at or
  above alpha: no outcome of its runs could have made it a verdict."""
  raw = [result.p_value for result in results]
  adjusted = holm(raw)
  judged = []
  for index, result in enumerate(results):
    best_case = raw[:index] + [result.smallest_possible_p] + raw[index + 1:]
    smallest = float(holm(best_case)[index])
    judged.append(dataclasses.replace(
        result, p_adjusted=float(adjusted[index]),
        verdict=decide(float(adjusted[index]), result.change_pct, smallest,
                       alpha, min_effect_pct)))
  return judged


def _power_z(level, power=POWER):
  return float(scipy.stats.norm.isf(level / 2.0) + scipy.stats.norm.ppf(power))


def detectable_slowdown_pct(spread, n_baseline, n_candidate, paired,
                            level=DEFAULT_ALPHA, power=POWER):
  """The smallest slowdown (in %, positive) the test catches with the given
  power at this level, for runs with this spread (log-scale sd, log_spread):
  the normal approximation on log ratios, the run count scaled by
  RANK_TEST_EFFICIENCY. nan when the spread is unknown or the test cannot
  reach p < level with these counts at all."""
  count = min(n_baseline, n_candidate)
  if math.isnan(spread) or count < fewest_runs(level, paired):
    return math.nan
  variance = (1.0 / count if paired
              else 1.0 / n_baseline + 1.0 / n_candidate)
  log_effect = _power_z(level, power) * spread * math.sqrt(
      variance / RANK_TEST_EFFICIENCY)
  return -100.0 * math.expm1(-log_effect)


def runs_for_change(spread, pct, paired, level=DEFAULT_ALPHA, power=POWER):
  """Runs a side (pairs, when paired) that catch a pct% slowdown with the
  given power (the inverse of detectable_slowdown_pct), never below
  fewest_runs; with the spread unknown (nan), fewest_runs itself."""
  fewest = fewest_runs(level, paired)
  if math.isnan(spread):
    return fewest
  per_side = 1.0 if paired else 2.0
  log_effect = -math.log1p(-pct / 100.0)
  needed = per_side * (_power_z(level, power) * spread / log_effect) ** 2
  return max(fewest, math.ceil(needed / RANK_TEST_EFFICIENCY))
