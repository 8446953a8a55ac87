"""Per-step timing and the statistics derived from it.

One StepTimes object is fed every step's wall time; the console report and
the JSON record both read their numbers from it, so they cannot disagree.
Definitions follow the original tool (scripts parse them):

* speed of a step = images in the step / its wall time;
* row images/sec = images per step / mean step time so far (or their
  exponentially weighted moving average, --display_perf_ewma);
* ``+/-`` = standard deviation of per-step speeds / sqrt(n);
* jitter = 1.4826 x median absolute deviation of per-step speeds;
* total images/sec = workers x timed steps x images per step / wall time of
  the whole timed loop (so gaps between steps count, unlike the rows).
"""

import math
import statistics

# The original's rounded constant (not 1/Phi^-1(3/4) = 1.482602...): the
# console's jitter must match the original's digits. The median absolute
# deviation is two stdlib medians: scipy would add seconds of import time
# to every run's start for it.
MAD_TO_STDDEV = 1.4826


class StepTimes:

  def __init__(self, images_per_step):
    self.images_per_step = images_per_step
    self.warmup = []
    self.timed = []
    self.losses = []
    self.timed_wall_time = None

  def add_warmup(self, seconds):
    self.warmup.append(seconds)

  def add(self, seconds, loss=None):
    self.timed.append(seconds)
    if loss is not None:
      self.losses.append(loss)

  @property
  def num_steps(self):
    return len(self.timed)

  def speeds(self):
    return [self.images_per_step / t for t in self.timed if t > 0]

  def mean_speed(self):
    if not self.timed:
      return 0.0
    return self.images_per_step / (sum(self.timed) / len(self.timed))

  def ewma_speed(self, weight):
    """Images per step / an exponentially weighted moving average of the
    step times (--display_perf_ewma): the newest step has weight 1, each
    older one (1 - weight) times the next newer one's; weight 1 is the
    last step alone."""
    if not self.timed:
      return 0.0
    n = len(self.timed)
    weights = [(1.0 - weight) ** (n - 1 - i) for i in range(n)]
    mean_time = sum(w * t for w, t in zip(weights, self.timed)) / sum(weights)
    return self.images_per_step / mean_time

  def speed_uncertainty(self):
    speeds = self.speeds()
    if len(speeds) < 2:
      return 0.0
    return statistics.pstdev(speeds) / math.sqrt(len(speeds))

  def jitter(self):
    speeds = self.speeds()
    if len(speeds) < 2:
      return 0.0
    middle = statistics.median(speeds)
    return MAD_TO_STDDEV * statistics.median(abs(s - middle) for s in speeds)

  def median_step_time(self):
    return statistics.median(self.timed) if self.timed else None

  def total_images_per_sec(self, num_workers=1):
    if not self.timed_wall_time:
      return 0.0
    return (num_workers * len(self.timed) * self.images_per_step /
            self.timed_wall_time)
