"""A history's analysis, shared by the `history` command and the dashboard's
history page: the runs in series (ordering.py), each with its steps
(change_points.py). Every step found in any series is one family: its
verdict (down, up, unconfirmed) follows the Holm-adjusted p over all of them
(stats.judge_family), so a long history of many configurations does not
find a slowdown in noise just by being tested often."""

import dataclasses

from results import comparison as comparison_lib
from results import stats
from results.errors import UsageError
from results.history import change_points
from results.history import ordering

IPS = 'summary.images_per_sec'


@dataclasses.dataclass
class SeriesHistory:
  series: ordering.Series
  steps: list           # change_points.Step, in order

  @property
  def throughputs(self):
    return [run[IPS] for run in self.series.runs]


@dataclasses.dataclass
class History:
  order: str
  alpha: float
  min_step_pct: float
  histories: list       # SeriesHistory per series
  left_out: int         # runs that could not be placed in the order
  # What a run's number is (comparison.METRICS): images/sec by default.
  metric: str = comparison_lib.THROUGHPUT

  @property
  def unit(self):
    return comparison_lib.METRICS[self.metric][0]

  @property
  def regression_kind(self):
    """The kind of step that is a regression: down for throughput, up for
    a metric that is better lower (memory, epochs to target)."""
    return (change_points.STEP_DOWN if comparison_lib.METRICS[self.metric][1]
            else change_points.STEP_UP)

  def shown_fields(self):
    """Configuration fields that differ between series (model always)."""
    return comparison_lib.varying_fields(
        [h.series.key for h in self.histories])

  def steps_of_kind(self, kind):
    return [step for h in self.histories for step in h.steps
            if step.kind == kind]


def analyse(frame, order, alpha=stats.DEFAULT_ALPHA,
            min_step_pct=change_points.MIN_STEP_PCT,
            metric=comparison_lib.THROUGHPUT):
  """Every configuration's history in the frame (store.load_runs), of
  ``metric`` (comparison.METRICS).

  Raises UsageError when no run can be placed in the order.
  """
  runs = comparison_lib.usable_runs(comparison_lib.as_metric(frame, metric))
  if not runs:
    raise UsageError(
        'none of the %d run record(s) is a successful run with a throughput, '
        'so there is no history to look at. Pass the folder of successful '
        'benchmark runs (status ok).' % len(frame))
  series, left_out = ordering.build_series(runs, order)
  if not series:
    raise UsageError(
        'none of the %d successful run(s) records a harness commit '
        '(environment.harness_commit: records written before it existed, or '
        'runs outside a git checkout), so they cannot be ordered by commit. '
        'Order them by time or TF version instead (`history --order time` or '
        '`--order tf_version`; the dashboard\'s --history_order).' % len(runs))
  histories = [
      SeriesHistory(series=one, steps=change_points.find_steps(
          [run[IPS] for run in one.runs], one.blocks, alpha, min_step_pct))
      for one in series]
  judge_steps(histories, alpha, min_step_pct)
  return History(order=order, alpha=alpha, min_step_pct=min_step_pct,
                 histories=histories, left_out=left_out, metric=metric)


def judge_steps(histories, alpha, min_step_pct):
  """Replaces each step's result by its verdict within the family of every
  step of the history (Holm)."""
  steps = [step for one in histories for step in one.steps]
  judged = iter(stats.judge_family([step.result for step in steps], alpha,
                                   min_step_pct))
  for one in histories:
    one.steps = [dataclasses.replace(step, result=next(judged))
                 for step in one.steps]
