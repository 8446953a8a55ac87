"""Runs with less noise: what the runner does so that two sides of a
comparison differ by the change, not by the machine.

* A fixed CPU set: every benchmark process is pinned to the same CPUs
  (``--cpus``; by default the ones this process may use), with as many
  intra-op and inter-op threads as CPUs unless its flags set them. Both
  are in its record (the flags; environment.cpu_affinity).
* A calibrated length (``--target_seconds``): one short calibration run per
  configuration, kept apart from the measurements, gives its step time, and
  every run of it then takes the --num_batches that fill the target (pyperf
  calibrates its loops alike), so a fast model is not judged on a few
  seconds of steps. Flags that set --num_batches win.
* Quiet checked: a single-process run whose timed loop shared the machine
  (its record's summary.other_cpu_share above ``--max_other_cpu_share``)
  is set aside (its record moved to DIR/.disturbed/, which no tool reads)
  and run again, at most ``--max_reruns`` times; the report says how many.
  A cluster run's tasks share the machine by design: never set aside.
* A balanced order: the runner alternates the sides' order round by round
  (runner.interleave: A B, B A, A B, ...), so a drift of the machine hits
  every side alike.
"""

import dataclasses
import math
import os
import shutil
from typing import Optional, Tuple

from results import record_io

DISTURBED_FOLDER = '.disturbed'
# The calibration run: enough steps for a stable median, few enough to be
# short for any model.
CALIBRATION_STEPS = 10
CALIBRATION_WARMUP = 2
# A calibrated run takes at least, and at most, this many steps.
MIN_STEPS, MAX_STEPS = 20, 100000
DEFAULT_MAX_OTHER_CPU_SHARE = 0.10
DEFAULT_MAX_RERUNS = 2


def parse_cpus(text):
  """'0-3,6' -> (0, 1, 2, 3, 6); ValueError for anything else."""
  cpus = set()
  for part in text.split(','):
    first, _, last = part.strip().partition('-')
    cpus.update(range(int(first), int(last or first) + 1))
  if not cpus or min(cpus) < 0:
    raise ValueError(text)
  return tuple(sorted(cpus))


@dataclasses.dataclass(frozen=True)
class NoiseControl:
  """The runner's low-noise settings (see the module docstring)."""
  cpus: Optional[Tuple[int, ...]] = None
  target_seconds: Optional[float] = None
  max_other_cpu_share: float = DEFAULT_MAX_OTHER_CPU_SHARE
  max_reruns: int = DEFAULT_MAX_RERUNS

  def cpu_set(self):
    return self.cpus or tuple(sorted(os.sched_getaffinity(0)))

  def pin(self):
    """Runs in the benchmark's process before it starts (preexec_fn)."""
    os.sched_setaffinity(0, self.cpu_set())

  def fixed_flags(self, flag_args):
    """The run's flags with the thread counts fixed to the CPU set's size
    (where the flags leave them to TensorFlow)."""
    threads = str(len(self.cpu_set()))
    added = ['--%s=%s' % (name, threads)
             for name in ('num_intra_threads', 'num_inter_threads')
             if not _sets(flag_args, name)]
    return list(flag_args) + added

  def calibrated_flags(self, flag_args, step_seconds):
    """The flags with --num_batches for target_seconds of steps."""
    steps = min(MAX_STEPS, max(MIN_STEPS, int(math.ceil(
        self.target_seconds / max(step_seconds, 1e-6)))))
    return list(flag_args) + ['--num_batches=%d' % steps]

  def wants_calibration(self, flag_args):
    return bool(self.target_seconds) and not _sets(flag_args, 'num_batches')

  def disturbed(self, records):
    """The other processes' share if this run was disturbed, else None."""
    if len(records) != 1:
      return None
    share = (records[0].get('summary') or {}).get('other_cpu_share')
    return share if _over(share, self.max_other_cpu_share) else None


def shared_the_cpu(run, bound=DEFAULT_MAX_OTHER_CPU_SHARE):
  """Did other processes take more than ``bound`` of the CPU during this
  run's timed loop (a compare row: summary.other_cpu_share)?"""
  return _over(run.get('summary.other_cpu_share'), bound)


def disturbed_note(side, runs):
  """'candidate: 1 of 10 runs shared the CPU ...' for compare's table, or
  '': such a run is kept when it still was after its last rerun, or when
  no runner checked it (a run started by hand), and the table says so."""
  count = sum(1 for run in runs if shared_the_cpu(run))
  if not count:
    return ''
  return ('%s: %d of %d runs shared the CPU (other processes took over '
          '%.0f%% of it during the timed loop)' % (
              side, count, len(runs), 100 * DEFAULT_MAX_OTHER_CPU_SHARE))


def _over(share, bound):
  """One test for the runner and compare: a measured share above bound
  (None, or NaN from a table, is unmeasured)."""
  return isinstance(share, (int, float)) and not math.isnan(share) and (
      share > bound)


def _sets(flag_args, name):
  return any(arg == '--' + name or arg.startswith('--%s=' % name)
             for arg in flag_args)


def calibration_flags(flag_args):
  return list(flag_args) + ['--num_batches=%d' % CALIBRATION_STEPS,
                            '--num_warmup_batches=%d' % CALIBRATION_WARMUP]


def step_seconds(record_paths):
  """The calibration run's median step time (None if it has none)."""
  for path in record_paths:
    try:
      seconds = record_io.read_record(path)['summary'].get(
          'median_step_time_sec')
    except (record_io.UnreadableRecord, KeyError, TypeError):
      continue
    if isinstance(seconds, (int, float)) and seconds > 0:
      return seconds
  return None


def set_aside(record_paths, result_dir):
  """Moves a disturbed run's records to DIR/.disturbed/ (kept, unread)."""
  folder = os.path.join(result_dir, DISTURBED_FOLDER)
  os.makedirs(folder, exist_ok=True)
  for path in record_paths:
    shutil.move(path, os.path.join(folder, os.path.basename(path)))
