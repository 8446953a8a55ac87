"""Bisection over releases, judged by `compare`'s statistics: no runs here.

Each configuration of the suite has a range: the releases from its last
known good one to its first known bad one. A step measures the range's
middle release together with both ends (interleaved, so all three are
measured under the same conditions) and compares, with compare's own test
(results/comparison.py, results/stats.py):

  ends     good -> bad      still a regression in this step's runs?
  low      good -> middle   did the middle get slower than good?
  high     middle -> bad    is bad slower than the middle?

and acts on them (decide):

  ends a regression and low a regression     -> the middle is bad: the step
      is in good..middle (the first release that got slower is there; when
      high is a regression too, a further slowdown lies in middle..bad,
      and the step says so)
  ends a regression, low `no change` or `improvement`, high a regression
                                             -> the middle is good: the step
      is in middle..bad
  ends `improvement`, or `no change` with an interval that rules out a
      slowdown of the minimum effect, before any step found a regression
                                             -> no slowdown between the two
      ends (nothing to bisect)
  anything else (a verdict `inconclusive`; ends `no change` whose
      interval still holds a slowdown of the minimum effect, so too few
      runs to tell; the slowdown split so that neither half is a
      regression; the ends no longer differing after an earlier step found
      that they do)                          -> more runs, never a guess
  the middle release has no successful run   -> skip it (as `git bisect
      skip`) and measure the release nearest the middle instead

Two adjacent releases in the range: found, and the size of the step is the
comparison that decided it (its Hodges-Lehmann change and interval).
"""

import dataclasses
import math

from results import stats

# What a step does next, per configuration.
MIDDLE_BAD = 'middle bad'        # narrow to good..middle
MIDDLE_GOOD = 'middle good'      # narrow to middle..bad
ADJACENT_SLOWER = 'adjacent slower'   # two adjacent releases, bad slower
NO_SLOWDOWN = 'no slowdown'
MORE_RUNS = 'more runs'
SKIP_MIDDLE = 'skip middle'
END_FAILED = 'end failed'
NARROWING = (MIDDLE_BAD, MIDDLE_GOOD, ADJACENT_SLOWER)

# Where a configuration's search stands.
OPEN = 'open'
FOUND = 'found'
NOT_SLOWER = 'not slower'
STOPPED = 'stopped'


@dataclasses.dataclass
class Judgement:
  action: str
  reason: str                  # a sentence, printed with the step
  deciding: object = None      # the ConfigComparison the action rests on


def _verdict(row):
  return row.verdict if row is not None else 'missing'


def rules_out_slowdown(row, min_effect_pct):
  """The row's interval excludes a slowdown of min_effect_pct or more."""
  low = row.result.change_pct_low if row.result is not None else math.nan
  return not math.isnan(low) and low > -min_effect_pct


def decide(ends, low, high, first_step, good, middle, bad,
           min_effect_pct=stats.DEFAULT_MIN_EFFECT_PCT):
  """What to do after a step, from its comparisons (ConfigComparison rows,
  or None for one that could not be made because a version had no
  successful run). middle, low and high are None when good and bad are
  adjacent releases."""
  if ends is None:
    return Judgement(END_FAILED, '%s or %s had no successful run in this '
                     'step, so nothing can be judged' % (good, bad))
  if middle is not None and (low is None or high is None):
    return Judgement(SKIP_MIDDLE, '%s had no successful run; skipping it '
                     'for the release nearest the middle' % middle, ends)
  ends_verdict = _verdict(ends)
  if ends_verdict == stats.INCONCLUSIVE:
    return Judgement(MORE_RUNS, '%s -> %s is inconclusive at this many runs'
                     % (good, bad), ends)
  if ends_verdict != stats.REGRESSION:
    if first_step and (ends_verdict == stats.IMPROVEMENT or
                       rules_out_slowdown(ends, min_effect_pct)):
      return Judgement(NO_SLOWDOWN, '%s is not slower than %s (%s): nothing '
                       'to bisect' % (bad, good, ends_verdict), ends)
    if first_step:
      return Judgement(MORE_RUNS, '%s -> %s shows no slowdown at this many '
                       'runs, but its interval does not rule out one of %g%% '
                       'or more' % (good, bad, min_effect_pct), ends)
    return Judgement(MORE_RUNS, '%s -> %s shows %s in this step although an '
                     'earlier step found a regression' % (good, bad,
                                                           ends_verdict), ends)
  if middle is None:
    return Judgement(ADJACENT_SLOWER, '%s is slower than %s, the release '
                     'before it' % (bad, good), ends)
  low_verdict, high_verdict = _verdict(low), _verdict(high)
  if low_verdict == stats.REGRESSION:
    further = ('; %s is slower than %s too, so a further slowdown lies '
               'between them' % (bad, middle)
               if high_verdict == stats.REGRESSION else '')
    return Judgement(MIDDLE_BAD, '%s is slower than %s, so it is bad%s'
                     % (middle, good, further), low)
  if (low_verdict in (stats.NO_CHANGE, stats.IMPROVEMENT)
      and high_verdict == stats.REGRESSION):
    return Judgement(MIDDLE_GOOD, '%s is not slower than %s (%s) and %s is '
                     'slower than it, so it is good' % (
                         middle, good, low_verdict, bad), high)
  return Judgement(MORE_RUNS, '%s -> %s is %s and %s -> %s is %s: neither '
                   'half holds the slowdown clearly' % (
                       good, middle, low_verdict, middle, bad, high_verdict),
                   ends)


@dataclasses.dataclass
class Range:
  """One configuration's search: releases from its good end to its bad end
  (both included, oldest first)."""
  config: str
  releases: list
  skipped: set = dataclasses.field(default_factory=set)
  status: str = OPEN
  steps: int = 0
  # A step has found the ends a regression (until then a step whose ends
  # show none means there is nothing to bisect).
  confirmed: bool = False
  # The comparison of the final pair (found) or the last one (otherwise).
  result: object = None
  message: str = ''

  @property
  def good(self):
    return self.releases[0]

  @property
  def bad(self):
    return self.releases[-1]

  def middle(self):
    """The unskipped release between the ends nearest the middle (the
    earlier of two equally near), or None when none is left."""
    inside = [index for index in range(1, len(self.releases) - 1)
              if self.releases[index] not in self.skipped]
    if not inside:
      return None
    centre = (len(self.releases) - 1) / 2.0
    return self.releases[min(inside, key=lambda i: (abs(i - centre), i))]

  def key(self):
    """Configurations with equal keys are measured in one step."""
    return tuple(self.releases), frozenset(self.skipped)

  def versions_to_run(self):
    middle = self.middle()
    return [self.good] + ([middle] if middle else []) + [self.bad]

  def apply(self, judgement, middle):
    """Moves the range after a step; sets status when the search ends."""
    self.steps += 1
    action = judgement.action
    if action in NARROWING:
      self.confirmed = True
    if action == MIDDLE_BAD:
      self.releases = self.releases[:self.releases.index(middle) + 1]
    elif action == MIDDLE_GOOD:
      self.releases = self.releases[self.releases.index(middle):]
    elif action == SKIP_MIDDLE:
      self.skipped.add(middle)
    elif action == NO_SLOWDOWN:
      self.status = NOT_SLOWER
    elif action == END_FAILED:
      self.stop(judgement.reason)
    if judgement.deciding is not None:
      self.result = judgement.deciding
    if self.status != OPEN:
      return
    if action in NARROWING and len(self.releases) == 2:
      self.status = FOUND
    elif self.middle() is None and len(self.releases) > 2:
      self.stop('every release between %s and %s had no successful run '
                '(%s), so the slowdown is somewhere in that range'
                % (self.good, self.bad, ', '.join(sorted(self.skipped))))

  def stop(self, message):
    self.status = STOPPED
    self.message = message


def next_group(ranges):
  """The open ranges measured together next: those sharing the first open
  one's releases (usually every configuration, while their slowdowns
  coincide)."""
  open_ranges = [r for r in ranges if r.status == OPEN]
  if not open_ranges:
    return []
  key = open_ranges[0].key()
  return [r for r in open_ranges if r.key() == key]
