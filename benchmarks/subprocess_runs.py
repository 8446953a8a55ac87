"""Runs benchmark processes one at a time, each fresh, and says how quiet the
machine was meanwhile (shared by performance.py and levers.py).

Every measurement is a new process (so one model's memory or thread pools
cannot colour the next) started only when other processes leave the CPU
mostly idle (``max_other_share``), and comes back with the share of the CPU
other processes used while it ran: a number is only as good as that share.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from results import record_io  # pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.measure import cpu_share  # pylint: disable=g-import-not-at-top

HARNESS = os.path.join(REPO, 'tf_cnn_benchmarks.py')


class RunFailed(RuntimeError):
  pass


class Runner:
  """Starts measurement processes; ``log`` gets progress lines."""

  def __init__(self, max_other_share=0.25, result_dir=None, log=print,
               attempts=3, timeout=None):
    self.max_other_share = max_other_share
    # Seconds one process may take (None: no limit); past it, RunFailed.
    self.timeout = timeout
    # A run that others disturbed anyway is repeated, up to this many times;
    # the least disturbed one counts.
    self.attempts = attempts
    self.result_dir = result_dir or tempfile.mkdtemp(prefix='perf_records_')
    os.makedirs(self.result_dir, exist_ok=True)
    self.log = log

  def _env(self, extra_env):
    env = dict(os.environ)
    env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
    env.update(extra_env or {})
    return env

  def measured(self, call):
    """(call(), other processes' CPU share while it ran), started once the
    machine is quiet. ``call`` must wait for every process it starts, or
    their CPU time counts as other processes'."""
    if self.max_other_share is not None:
      cpu_share.wait_until_quiet(self.max_other_share, log=self.log)
    with cpu_share.OtherProcessesMeter() as meter:
      result = call()
    return result, meter.share

  def _run_once(self, cmd, extra_env):
    def call():
      try:
        return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                              env=self._env(extra_env), timeout=self.timeout)
      except subprocess.TimeoutExpired as e:
        raise RunFailed('%s\nstopped after %.0f s (the time limit)\n%s%s' % (
            ' '.join(cmd), self.timeout, _text(e.stdout)[-3000:],
            _text(e.stderr)[-3000:])) from None
    out, share = self.measured(call)
    if out.returncode != 0:
      raise RunFailed('%s\nexit code %d\n%s%s' % (
          ' '.join(cmd), out.returncode, out.stdout[-3000:],
          out.stderr[-3000:]))
    return out.stdout, share

  def run(self, cmd, extra_env=None, on_discard=None):
    """(stdout, other processes' CPU share while it ran).

    ``on_discard(stdout)`` is called for each disturbed run not kept.
    """
    best = None
    for attempt in range(self.attempts if self.max_other_share is not None
                         else 1):
      result = self._run_once(cmd, extra_env)
      share = result[1]
      if best is None or (share is not None and share < best[1]):
        if best is not None and on_discard:
          on_discard(best[0])
        best = result
      elif on_discard:
        on_discard(result[0])
      if (share is None or self.max_other_share is None or
          share <= self.max_other_share):
        break
      self.log('others used %.0f%% of the CPU during the run (attempt %d); '
               'measuring again' % (100 * share, attempt + 1))
    return best

  def json_line(self, script_args, extra_env=None):
    """Runs a script that prints one JSON line last; returns (dict, share)."""
    stdout, share = self.run([sys.executable] + script_args, extra_env)
    data = json.loads(stdout.strip().splitlines()[-1])
    data['other_cpu_share'] = share
    return data

  def harness(self, flags, extra_env=None, entry=(HARNESS,)):
    """Runs the benchmark CLI; returns its run record (plus the share).

    ``entry``: the script and its own arguments, for a script that runs
    the CLI on the flags that follow (engine_op_times.py's profiler)."""
    stdout, share = self.run(
        [sys.executable] + list(entry) + [
            '--device=cpu', '--result_dir=%s' % self.result_dir] +
        list(flags), extra_env, on_discard=_drop_record)
    rec = record_io.read_record(_record_path(stdout))
    rec['other_cpu_share'] = share
    return rec


def _record_path(stdout):
  """The harness prints 'Run record: PATH' last."""
  for line in reversed(stdout.splitlines()):
    if line.startswith('Run record: '):
      return line[len('Run record: '):].strip()
  raise RunFailed('no run record in the output:\n' + stdout[-2000:])


def _text(output):
  """A TimeoutExpired's partial output (bytes even in text mode, or None)."""
  if isinstance(output, bytes):
    return output.decode('utf-8', 'replace')
  return output or ''


# "total images/sec: N" as the harness and the original print it, alone or
# behind the launcher's task prefix ("[worker1] total images/sec: N"). Not
# the launcher's own "Cluster total images/sec" (a sum of different rates).
_TOTAL_RATE = re.compile(r'^(?:\[(\w+)\] )?total images/sec: ([0-9.]+)\s*$',
                         re.MULTILINE)


def total_rates(stdout):
  """{task label or '': last 'total images/sec' it printed}."""
  return {label: float(rate) for label, rate in _TOTAL_RATE.findall(stdout)}


def _drop_record(stdout):
  try:
    os.unlink(_record_path(stdout))
  except (OSError, RunFailed):
    pass


def model_flags(model, batch_size, num_batches, num_warmup_batches):
  """The harness flags of one model measurement (no per-step lines)."""
  return ['--model=%s' % model, '--batch_size=%d' % batch_size,
          '--num_batches=%d' % num_batches,
          '--num_warmup_batches=%d' % num_warmup_batches,
          '--display_every=1000']


def median_rate(rec):
  """Images/sec of the median timed step: one step disturbed by another
  process moves it far less than the harness's total images/sec."""
  times = rec['timing']['step_times_sec']
  return rec['config']['global_batch_size'] / statistics.median(times)


def share_text(share):
  return '  n/a' if share is None else '%4.0f%%' % (100 * share)
