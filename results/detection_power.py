"""How big a change `compare` can see with n runs a side: the measured figures.

studies/detection_power.py measures them on real runs and writes them to
one data file in the repository, DATA_PATH (results/detection_power.json);
`bisect` reads that file to plan its first step's runs, before any run of
its own shows a spread (`compare` says what a comparison could detect from
the spread of its own runs: results/stats.py). Nothing here invents a
figure: a model or run count the file does not cover has no answer.

The file (version 2), written whole by the study (never edited by hand)
from its table of runs, results/detection_power_runs.csv.gz, so
`python studies/detection_power.py --recompute
results/detection_power_runs.csv.gz` gives it again:

  {"version": 2,
   "source": {"mode": "quick" | "full", "command": ..., "recompute": ...,
              "runs_table": ..., "date": ..., "first_run": ...,
              "cpu_model": ..., "tf_version": ..., "harness_version": ...,
              "runs": ..., "failed_runs": ..., "disturbed_reruns": ...,
              "note": ...},
   "settings": {"alpha": 0.05, "min_effect_pct": 2.0, "ns": [5, 6, 8, 10],
                "rounds": 10, "slowdowns_pct": [5.0], "interval": ...,
                "detect_at": 0.95, "max_false_alarms": 0.05, ...goals},
   "models": {"trivial": {
       "trials": {"0": 100, "5": 40},          # by injected slowdown in %
       "false_alarms": {"10": SHARE, ...},     # A/A trials called a
                                               # `regression`, per n
       "power": {"5": {"10": SHARE, ...}},     # slowed trials called one
       "verdicts": {"0": {"10": {"no change": 97, ...}}, ...},
       "realised_slowdown_pct": {"0": 0.1, "5": 4.8},   # the runs' own
       "machine_minutes_per_verdict": {"10": 3.1, ...},
       "noise_floor": {"spread": ..., "caught_at_95_pct": ...,
                       "pairs_for_5pct_at_95": ...} or null,
       "goals": {...}, "smallest_n_for_5pct": 10 or null, ...}},
   "suite": {"file": ..., "configurations": [...], "trials": ...,
             "family_false_alarms": {"10": SHARE, ...}, ...}}   # optional

  SHARE = {"count": 1, "trials": 100, "rate": 0.01, "low": ..., "high": ...}
          (95% Wilson interval) or null when no trial was judged.
"""

import json
import os

from basics import atomic_files

DATA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         'detection_power.json')
VERSION = 2
# The question the issue asks: catch a 5% slowdown at least 95% of the time
# with at most 5% false alarms.
TARGET_SLOWDOWN_PCT = 5
DETECT_AT = 0.95
MAX_FALSE_ALARMS = 0.05
# A rate plans nothing on fewer trials: 6 of 6 caught puts the true rate
# anywhere from 61% to 100% (Wilson, 95%), which cannot promise DETECT_AT,
# and 0 of 6 false alarms anywhere up to 39%.
MIN_TRIALS = 20


def load(path=DATA_PATH):
  """The figures, or None when the file is absent or unreadable (compare
  then says the power is not measured rather than failing)."""
  try:
    with open(path, 'r', encoding='utf-8') as data_file:
      data = json.load(data_file)
  except (OSError, ValueError):
    return None
  if not isinstance(data, dict) or data.get('version') != VERSION:
    return None
  return data


def write(data, path=DATA_PATH):
  data = dict(data, version=VERSION)
  atomic_files.write_text_atomically(
      path, json.dumps(data, indent=2, sort_keys=True) + '\n')


def _rate(share):
  """The share's rate; None when unmeasured or on fewer than MIN_TRIALS."""
  if share is None or share.get('trials', 0) < MIN_TRIALS:
    return None
  return share.get('rate')


def smallest_detectable_pct(model_figures, n):
  """The smallest measured slowdown (in %) caught at >= DETECT_AT with n
  runs a side while false alarms stay <= MAX_FALSE_ALARMS; None if none
  of the measured slowdowns is, or n was not measured."""
  false_alarms = _rate(model_figures.get('false_alarms', {}).get(str(n)))
  if false_alarms is None or false_alarms > MAX_FALSE_ALARMS:
    return None
  caught = [float(pct) for pct, by_n in model_figures.get('power', {}).items()
            if (_rate(by_n.get(str(n))) or 0.0) >= DETECT_AT]
  return min(caught) if caught else None


def _measured_ns(data):
  return sorted(int(n) for n in data.get('settings', {}).get('ns', []))


def describe_source(data):
  """'a --quick run on <cpu>, 2026-11-25' for a footnote."""
  source = data.get('source', {})
  return '%s run (%s) on %s, %s' % (
      source.get('mode', 'unknown'), source.get('command', '?'),
      source.get('cpu_model', 'an unknown machine'),
      source.get('date', 'undated'))


class Power:
  """Answers for one comparison: what could n runs see, what n is needed."""

  def __init__(self, data):
    self.data = data

  @classmethod
  def from_file(cls, path=DATA_PATH):
    return cls(load(path))

  @property
  def measured(self):
    return bool(self.data and self.data.get('models'))

  @property
  def full(self):
    """Measured by a full run (not a --quick check of the machinery): only
    then do its run counts plan anything (bisect's repeats)."""
    return self.measured and self.data.get('source', {}).get('mode') == 'full'

  def _figures(self, model):
    """(figures of the model, measured on it?) or (None, False). A model
    that was not measured borrows the worst measured one's figures."""
    models = (self.data or {}).get('models', {})
    if model in models:
      return [models[model]], True
    return list(models.values()), False

  def detectable(self, model, n):
    """(X in %, on this model?) that n runs a side could have caught, or
    (None, on_model) when nothing measured answers. n between measured
    counts uses the next smaller one (a conservative answer)."""
    if not self.measured:
      return None, False
    usable = [m for m in _measured_ns(self.data) if m <= n]
    if not usable:
      return None, False
    figures, on_model = self._figures(model)
    answers = [smallest_detectable_pct(f, usable[-1]) for f in figures]
    if not answers or any(a is None for a in answers):
      return None, on_model
    return max(answers), on_model

  def repeat_for(self, model, pct=TARGET_SLOWDOWN_PCT):
    """The smallest measured n that catches a pct% slowdown, or None."""
    if not self.measured:
      return None
    for n in _measured_ns(self.data):
      found, _ = self.detectable(model, n)
      if found is not None and found <= pct:
        return n
    return None
