"""Is the candidate slower than the baseline? Distribution-free.

Method (chosen over a bootstrap because it is exact for the small run counts
benchmarks have, deterministic, and its interval agrees with its test):

* Throughputs are compared on the log scale, so a shift is a ratio:
  d = log(candidate) - log(baseline).
* Test: two-sided Mann-Whitney U on the log samples (scipy.stats.mannwhitneyu).
  Exact null distribution when both groups have at most EXACT_MAX_SIZE samples
  and there are no ties; otherwise the normal approximation with tie
  correction and continuity correction.
* Estimate: Hodges-Lehmann shift = median of all pairwise differences d_ij,
  reported as % change = 100 * (exp(d) - 1).
* Confidence interval: the Mann-Whitney (Moses) interval for the shift: with
  the m*n pairwise differences sorted, [D_(c+1), D_(mn-c)] where c is the
  largest count with P(U <= c) <= alpha/2. It excludes 0 exactly when the test
  rejects at alpha, so the table never shows a "significant" change whose
  interval straddles zero.
* Verdict: `regression` when p < alpha AND the estimate is at most
  -min_effect_pct; `improvement` when p < alpha AND it is at least
  +min_effect_pct; `inconclusive` when the sample sizes cannot reach p < alpha
  at all (e.g. 3 runs against 3: the smallest two-sided p is 0.1);
  otherwise `no change`.

False alarms: with no real difference the test rejects in at most alpha of
comparisons (two-sided, so at most alpha/2 are called regressions), and the
effect threshold only lowers that. tests/results/test_stats.py measures it
over 500 seeded draws of 10 runs against 10 runs (noise sd 2%): the rate of
any verdict other than `no change` must stay at or below alpha + 0.02.
Measured: 1.4% (1.0% called regressions) with the default 2% threshold; over
5000 draws 1.7% (0.9% regressions); the bare test without a threshold 4.1%.

Caveat for per-step samples (used when a group has a single run): steps of one
process are autocorrelated, so the p-value there is optimistic; the effect
threshold is what keeps such comparisons honest.
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
# Pairwise differences grow as m*n; longer sample lists are thinned evenly.
MAX_SAMPLES_PER_GROUP = 2000

REGRESSION = 'regression'
IMPROVEMENT = 'improvement'
NO_CHANGE = 'no change'
INCONCLUSIVE = 'inconclusive'

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
  p_value: float
  smallest_possible_p: float
  method: str              # 'exact' or 'normal'
  verdict: str


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


def _exact_cdf(m, n):
  counts = _null_u_counts(m, n)
  return np.cumsum(counts) / counts.sum()


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
  shift = float(np.median(differences))
  pooled = np.concatenate([x, y])
  has_ties = len(np.unique(pooled)) < m + n
  exact = max(m, n) <= EXACT_MAX_SIZE and not has_ties
  # The method is ours, not scipy's 'auto' (exact only up to 8 samples a
  # group): the p-value has to come from the same null distribution as the
  # interval's critical count below, or interval and verdict could disagree.
  p_value = float(scipy.stats.mannwhitneyu(
      y, x, use_continuity=True, alternative='two-sided',
      method='exact' if exact else 'asymptotic').pvalue)
  pairs = m * n
  if exact:
    method = 'exact'
    cdf = _exact_cdf(m, n)
    smallest_p = min(1.0, 2.0 * float(cdf[0]))
    below = np.nonzero(cdf <= alpha / 2.0)[0]
    critical = int(below[-1]) if len(below) else -1
  else:
    method = 'normal'
    sd = math.sqrt(max(_tie_corrected_variance(m, n, pooled), 0.0))
    # All values tied: no ordering at all, so no evidence either way.
    smallest_p = (2.0 * float(scipy.stats.norm.sf((pairs / 2.0 - 0.5) / sd))
                  if sd > 0 else 1.0)
    z = float(scipy.stats.norm.isf(alpha / 2.0))
    critical = int(math.floor(pairs / 2.0 - 0.5 - z * sd))
  if critical < 0:
    low, high = -math.inf, math.inf
  else:
    low = float(differences[critical])
    high = float(differences[pairs - 1 - critical])
  return shift, low, high, p_value, smallest_p, method


def fewest_runs(alpha=DEFAULT_ALPHA):
  """The fewest runs a side (n against n) with which the test can reach
  p < alpha at all: the smallest two-sided exact p is 2 / C(2n, n), so 4 at
  alpha = 0.05 (3 against 3 can never do better than 0.1)."""
  n = 1
  while 2.0 / math.comb(2 * n, n) >= alpha:
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


def compare_throughput(baseline, candidate, alpha=DEFAULT_ALPHA,
                       min_effect_pct=DEFAULT_MIN_EFFECT_PCT):
  """Compares two samples of throughput (images/sec; higher is better)."""
  baseline = np.asarray(baseline, dtype=float)
  candidate = np.asarray(candidate, dtype=float)
  if np.any(baseline <= 0) or np.any(candidate <= 0):
    raise ValueError('throughputs must be positive')
  shift, low, high, p_value, smallest_p, method = mann_whitney(
      np.log(baseline), np.log(candidate), alpha)
  change = _to_pct(shift)
  return ShiftComparison(
      n_baseline=len(baseline), n_candidate=len(candidate),
      baseline_median=float(np.median(baseline)),
      candidate_median=float(np.median(candidate)),
      change_pct=change, change_pct_low=_to_pct(low),
      change_pct_high=_to_pct(high), p_value=p_value,
      smallest_possible_p=smallest_p, method=method,
      verdict=decide(p_value, change, smallest_p, alpha, min_effect_pct))
