"""Test-only: slow every timed step by a known amount, changing nothing else.

  TF_CNN_BENCHMARKS_TEST_SLOWDOWN=0.05 tf_cnn_benchmarks --model=lenet ...

After each timed step the step loop idles for that fraction of the step's own
wall time (0.05: 5% of it), inside the timed loop's clock, so the run's
`total images/sec` falls as if the step itself had become 5% slower
(images/sec x 1/1.05) while the graph, the data and the step times recorded
per step stay exactly those of a real run. studies/detection_power.py
uses it to measure how often `compare` catches a slowdown of known size.

A slowed run says so in its record (`injected_slowdown`: the fraction; null
or absent in a real run), and `compare` refuses to mix such runs with real
ones unless asked (--allow_injected_slowdown): they must never pass for
real measurements. The variable is named in results/injected_runs.py, which
the tools that run benchmarks (`bisect`) read too.
"""

import math
import os
import time

from results import injected_runs
from tf_cnn_benchmarks.config.usage_errors import UsageError

ENV_VAR = injected_runs.ENV_VAR
# A slowdown beyond 10x the step's time is a typo, not a test.
MAX_FRACTION = 10.0


def from_environment(environ=None):
  """The fraction to add (a float > 0), or None when unset or 0.

  Raises UsageError for a value that is not a number in [0, MAX_FRACTION].
  """
  environ = os.environ if environ is None else environ
  text = environ.get(ENV_VAR, '').strip()
  if not text:
    return None
  try:
    fraction = float(text)
  except ValueError:
    fraction = math.nan
  if not 0.0 <= fraction <= MAX_FRACTION:   # also refuses nan
    raise UsageError(
        'the environment variable %s=%r is not a fraction between 0 and %g. '
        'It is a test-only switch that idles after each timed step for that '
        'fraction of the step\'s time (0.05: 5%% slower); set a number such '
        'as 0.05, or unset it for a real measurement.'
        % (ENV_VAR, text, MAX_FRACTION))
  return fraction or None


def recorded_value():
  """What a run record says (`injected_slowdown`); never raises, so a run
  that fails on a bad value still writes its record."""
  try:
    return from_environment()
  except UsageError:
    return os.environ.get(ENV_VAR)


class Pause:
  """Idles for the fraction of a step's seconds (a no-op when unset)."""

  def __init__(self, fraction):
    self.fraction = fraction or 0.0

  def after_step(self, step_seconds):
    if self.fraction > 0 and step_seconds > 0:
      time.sleep(self.fraction * step_seconds)
