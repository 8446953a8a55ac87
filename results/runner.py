"""Run benchmark processes one after another, one progress line per run.

Each run is a fresh process (`python tf_cnn_benchmarks.py FLAGS
--result_dir=DIR [--label=L]`, or for a cluster configuration `python
tf_cnn_benchmarks.py launch LAUNCH_ARGS -- FLAGS ...`: every task of the
local cluster writes its record there), so repeats are independent
observations.
Its output goes to a log file under DIR/logs/; what the run measured is read
back from the record it wrote. Each run writes into a hidden folder of its
own under DIR, whose records are then moved into DIR: a run is credited
with its own records only, even while another suite writes to DIR too. A
run fails when the process exits non-zero, times out, writes no record, or
writes a record whose status is not `ok`; the remaining runs still go ahead.

run_all adds a `sequence` object to every record a run wrote (SCHEMA.md):
the plan it belongs to, the round (repeat) and its position in the plan.
Interleaved plans run one run of each side per round, so `compare` pairs a
round's runs of two sides and judges them with the paired test.

SIGTERM and SIGHUP stop the runs as Ctrl-C does (KeyboardInterrupt): the
benchmark under way, in a session of its own, is asked to stop (SIGTERM to
its process group, so it records itself as interrupted) and killed if it
has not after STOP_GRACE_SECONDS; it is never left running.
"""

import contextlib
import dataclasses
import datetime
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from basics import stop_signals
from results import quiet_runs
from results import record_io
from results import store

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BENCHMARK_SCRIPT = os.path.join(REPO_ROOT, 'tf_cnn_benchmarks.py')
LOG_FOLDER = 'logs'
# The record status of a run whose evaluations never reached
# --stop_at_top_1_accuracy (exit code 5): measured, not failed.
TARGET_NOT_REACHED = 'target_not_reached'
# A benchmark asked to stop ends within ~2 s plus a tick (a cluster's
# launcher within 12 s); after this long it is killed.
STOP_GRACE_SECONDS = 15.0


@dataclasses.dataclass
class PlannedRun:
  name: str           # the configuration's name
  flag_args: list     # benchmark flags, without --result_dir/--label
  label: str
  repeat_index: int   # 1-based
  repeat_count: int
  # The interpreter to run it with (a TensorFlow version's venv); None: the
  # one the caller passes.
  python: object = None
  # Arguments of `tf_cnn_benchmarks launch` (['--ps=1', '--workers=2']):
  # the run is a local cluster; empty: a single process.
  launch_args: list = dataclasses.field(default_factory=list)
  # Variables added to the run's environment (venvs.test_environment).
  env: dict = dataclasses.field(default_factory=dict)
  # Seconds of steps its --num_batches is calibrated to, where they differ
  # from the runner's --target_seconds (studies/noise_sources.py compares
  # run lengths in one interleaved plan); None: the runner's.
  target_seconds: object = None


@dataclasses.dataclass
class RunOutcome:
  run: PlannedRun
  ok: bool
  seconds: float
  exit_code: object           # int, or None when it timed out
  images_per_sec: object      # float or None
  record_paths: list
  log_path: str
  failure: str = ''
  # The records it wrote, read back.
  records: list = dataclasses.field(default_factory=list)
  # Times it was run again because its timed loop shared the machine; and
  # the other processes' CPU share that last set it aside, if it still did.
  reruns: int = 0
  still_disturbed: object = None


def plan_runs(configs, repeat_override=None, label_override=None,
              python=None, env=None, first_repeat=1):
  """Expands configurations into runs, in rounds: repeat 1 of every
  configuration, then repeat 2 of every one, and so on.

  A machine that slowly gets busier or cooler then colours every
  configuration alike instead of whichever one happened to run last.
  first_repeat > 1 plans more repeats after ones already made (numbered on
  from there).
  """
  per_config = []
  for config in configs:
    count = repeat_override or config.repeat
    label = config.label if label_override is None else label_override
    last = first_repeat + count - 1
    per_config.append([PlannedRun(config.name, config.flag_args, label, index,
                                  last, python, list(config.launch_args),
                                  dict(env or {}))
                       for index in range(first_repeat, last + 1)])
  return interleave(per_config)


def interleave(plans, first_round=0):
  """One list from several (e.g. one plan per TensorFlow version), taking
  a run from each in turn, so versions are compared under the same
  conditions rather than one after the other; in a balanced order (A B,
  B A, A B, ...: quiet_runs.py), so a drift of the machine over the rounds
  hits every plan alike. first_round: the rounds already run, when these
  plans go on from them (bisect's top-ups), so the order alternates on."""
  runs = []
  for position in range(max((len(plan) for plan in plans), default=0)):
    this_round = [plan[position] for plan in plans if position < len(plan)]
    runs.extend(this_round if (first_round + position) % 2 == 0
                else this_round[::-1])
  return runs


def build_command(run, python, benchmark_script, result_dir):
  command = [run.python or python, benchmark_script]
  if run.launch_args:
    command += ['launch'] + list(run.launch_args) + ['--']
  command += list(run.flag_args)
  command.append('--result_dir=%s' % result_dir)
  if run.label:
    command.append('--label=%s' % run.label)
  return command


def _safe_file_part(text):
  return re.sub(r'[^A-Za-z0-9_.-]+', '-', text).strip('-')[:60] or 'run'


def _log_path(result_dir, run):
  stamp = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%S%fZ')
  name = '%s_%s_r%d.log' % (stamp, _safe_file_part(run.name), run.repeat_index)
  return os.path.join(result_dir, LOG_FOLDER, name)


def _last_line(path):
  try:
    with open(path, 'r', encoding='utf-8', errors='replace') as log_file:
      lines = [line.strip() for line in log_file if line.strip()]
  except OSError:
    return ''
  return lines[-1][:200] if lines else ''


def _run_process(command, log_path, timeout, env, preexec=None):
  """Runs command with output to log_path; returns (exit code or None, s).
  ``preexec`` runs in the child before it starts (the CPU pinning)."""
  started = time.monotonic()
  with open(log_path, 'w', encoding='utf-8') as log_file:
    log_file.write('$ %s\n' % ' '.join(command))
    log_file.flush()
    # Own session: on timeout the whole process group (the benchmark and any
    # helper it started) is stopped, not just the top process.
    # A stop signal inside Popen would leave the started benchmark with
    # nobody holding it: it is acted on once Popen has returned.
    with _stop_deferred():
      process = subprocess.Popen(command, stdout=log_file,
                                 stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True, preexec_fn=preexec)
    try:
      _raise_deferred_stop()
      exit_code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      os.killpg(process.pid, signal.SIGKILL)
      process.wait()
      exit_code = None
    except BaseException:   # Ctrl-C, SIGTERM, SIGHUP: stop the benchmark.
      _stop(process)
      raise
  return exit_code, time.monotonic() - started


def _stop(process):
  """Asks the benchmark's process group to stop (it records itself as
  interrupted), then kills it if it has not within STOP_GRACE_SECONDS."""
  try:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(STOP_GRACE_SECONDS)
  except subprocess.TimeoutExpired:
    pass
  except ProcessLookupError:
    return
  try:
    os.killpg(process.pid, signal.SIGKILL)
  except ProcessLookupError:
    pass
  process.wait()


def _read_new_records(paths):
  records = []
  for path in paths:
    try:
      records.append(record_io.read_record(path))
    except record_io.UnreadableRecord:
      continue
  return records


def _move_records(own_dir, result_dir):
  """Moves the record files a run wrote into its own folder to result_dir;
  returns their new paths."""
  moved = []
  for path in store.find_record_files(own_dir):
    destination = os.path.join(result_dir, os.path.basename(path))
    os.replace(path, destination)
    moved.append(destination)
  return sorted(moved)


def execute(run, python, benchmark_script, result_dir, timeout=None, env=None,
            preexec=None):
  """Runs one benchmark process and judges it; never raises for a bad run."""
  os.makedirs(os.path.join(result_dir, LOG_FOLDER), exist_ok=True)
  log_path = _log_path(result_dir, run)
  # Hidden (store.find_record_files skips it): only this run writes here.
  own_dir = tempfile.mkdtemp(prefix='.run-', dir=result_dir)
  command = build_command(run, python, benchmark_script, own_dir)
  env = dict(os.environ if env is None else env, PYTHONUNBUFFERED='1')
  env.update(run.env)
  try:
    exit_code, seconds = _run_process(command, log_path, timeout, env,
                                      preexec)
  except OSError as error:   # e.g. the interpreter does not exist
    return RunOutcome(run, False, 0.0, None, None, [], log_path,
                      'could not start %s: %s' % (command[0], error))
  finally:
    # Stopped or not, whatever it recorded joins the others.
    new_paths = _move_records(own_dir, result_dir)
    shutil.rmtree(own_dir, ignore_errors=True)
  records = _read_new_records(new_paths)
  outcome = RunOutcome(run, False, seconds, exit_code, None, new_paths,
                       log_path, records=records)
  throughputs = [r['summary'].get('images_per_sec') for r in records
                 if r.get('status') in ('ok', TARGET_NOT_REACHED)]
  throughputs = [t for t in throughputs if isinstance(t, (int, float))]
  # A convergence run short of its target (exit 5) trained and measured:
  # its records say so, and it counts as a run (compare leaves its time to
  # target out).
  short_of_target = bool(records) and all(
      r.get('status') == TARGET_NOT_REACHED for r in records)
  if exit_code is None:
    outcome.failure = 'timed out after %g s' % timeout
  elif short_of_target:
    outcome.ok = True
  elif exit_code != 0:
    outcome.failure = 'exit code %d: %s' % (exit_code, _last_line(log_path))
  elif not records:
    outcome.failure = 'exited 0 but wrote no run record to %s' % result_dir
  elif any(r.get('status') != 'ok' for r in records):
    bad = next(r for r in records if r.get('status') != 'ok')
    message = (bad.get('failure') or {}).get('message') or ''
    outcome.failure = 'record status %s %s' % (bad.get('status'), message)
  else:
    outcome.ok = True
  if throughputs:
    outcome.images_per_sec = throughputs[0]
  return outcome


def progress_line(position, total, outcome):
  run = outcome.run
  head = '[%d/%d] %s (%d/%d)' % (position, total, run.name, run.repeat_index,
                                 run.repeat_count)
  if run.label:  # e.g. the TensorFlow version when versions take turns
    head += ' ' + run.label
  if outcome.ok:
    rate = ('%.1f images/sec' % outcome.images_per_sec
            if outcome.images_per_sec is not None else 'no throughput')
    reruns = (' (run %d times: the machine was busy)' % (outcome.reruns + 1)
              if outcome.reruns else '')
    if outcome.still_disturbed is not None:
      reruns += (' (kept though other processes used %.0f%% of the CPU '
                 'during its timed loop)' % (100 * outcome.still_disturbed))
    return '%s: ok %s in %.1f s%s' % (head, rate, outcome.seconds, reruns)
  return '%s: FAILED %s (log: %s)' % (head, outcome.failure, outcome.log_path)


def mark_sequence(paths, sequence):
  """Adds the run's `sequence` to the records it wrote (every task's, for a
  cluster run). The runner alone knows the plan, so it writes this after
  the process ended; atomically, as the benchmark wrote the record."""
  for path in paths:
    try:
      record = record_io.read_record(path)
    except record_io.UnreadableRecord:
      continue   # execute has judged the run by its records already
    record['sequence'] = sequence
    record_io.write_record_atomically(path, record)


def run_all(runs, result_dir, python=None, benchmark_script=None, timeout=None,
            stream=None, env=None, noise=None):
  """Runs every planned run in order, with less noise (``noise``: a
  quiet_runs.NoiseControl, its defaults when None); prints a line as each
  one ends."""
  python = python or sys.executable
  benchmark_script = benchmark_script or DEFAULT_BENCHMARK_SCRIPT
  stream = stream or sys.stdout
  noise = noise or quiet_runs.NoiseControl()
  os.makedirs(result_dir, exist_ok=True)
  outcomes = []

  plan_id = uuid.uuid4().hex

  def run_once(run, into=result_dir):
    return execute(run, python, benchmark_script, into, timeout, env,
                   noise.pin)
  with _signals_interrupt():
    runs = _calibrated(runs, noise, run_once, result_dir, stream)
    for position, run in enumerate(runs, 1):
      run = dataclasses.replace(run,
                                flag_args=noise.fixed_flags(run.flag_args))
      outcome = _quiet_outcome(run, noise, run_once, result_dir, stream)
      mark_sequence(outcome.record_paths, {
          'plan': plan_id, 'round': run.repeat_index, 'position': position,
          'config': run.name})
      outcomes.append(outcome)
      print(progress_line(position, len(runs), outcome), file=stream,
            flush=True)
  return outcomes


def _calibrated(runs, noise, run_once, result_dir, stream):
  """The runs with --num_batches for noise.target_seconds (or the run's
  own), from one calibration run per configuration (kept out of the
  results)."""
  step_of = {}
  calibrated = []
  for run in runs:
    # A run of its own length (noise_sources' runs_4x) is calibrated to it.
    own = (noise if run.target_seconds is None else
           dataclasses.replace(noise, target_seconds=run.target_seconds))
    if own.wants_calibration(run.flag_args):
      if run.name not in step_of:
        probe = dataclasses.replace(run, flag_args=own.fixed_flags(
            quiet_runs.calibration_flags(run.flag_args)))
        with tempfile.TemporaryDirectory(prefix='.calibration-',
                                         dir=result_dir) as scratch:
          step_of[run.name] = quiet_runs.step_seconds(
              run_once(probe, scratch).record_paths)
        print('calibration of %s: %s' % (run.name, (
            '%.4f s a step, so %s for %g s' % (
                step_of[run.name], own.calibrated_flags(
                    [], step_of[run.name])[0], own.target_seconds)
            if step_of[run.name] else 'no step time; its flags as given')),
              file=stream, flush=True)
      if step_of[run.name]:
        run = dataclasses.replace(run, flag_args=own.calibrated_flags(
            run.flag_args, step_of[run.name]))
    elif own.target_seconds and run.name not in step_of:
      # Said, not silent: a suite file's --num_batches (the quick suite's
      # 30) wins over --target_seconds.
      step_of[run.name] = None
      print('calibration of %s: none, its flags set --num_batches (which '
            'wins over --target_seconds)' % run.name, file=stream, flush=True)
    calibrated.append(run)
  return calibrated


def _quiet_outcome(run, noise, run_once, result_dir, stream):
  """The run, run again (at most noise.max_reruns times) while its timed
  loop shared the machine; each disturbed run's records set aside."""
  outcome = run_once(run)
  for rerun in range(1, noise.max_reruns + 1):
    share = noise.disturbed(outcome.records) if outcome.ok else None
    if share is None:
      return outcome
    quiet_runs.set_aside(outcome.record_paths, result_dir)
    print('  %s (%d/%d): other processes used %.0f%% of the CPU during its '
          'timed loop; set aside, running it again' % (
              run.name, run.repeat_index, run.repeat_count, 100 * share),
          file=stream, flush=True)
    outcome = run_once(run)
    outcome.reruns = rerun
  if outcome.ok:
    outcome.still_disturbed = noise.disturbed(outcome.records)
  return outcome


@contextlib.contextmanager
def _signals_interrupt():
  """Every stop signal raises KeyboardInterrupt in the main thread, as
  Ctrl-C does, so the run under way is stopped rather than orphaned."""
  if threading.current_thread() is not threading.main_thread():
    yield
    return

  def interrupt(signum, frame):
    del frame
    name = signal.Signals(signum).name
    if _deferral['depth']:
      _deferral['pending'] = name
      return
    raise KeyboardInterrupt(name)
  previous = {sig: signal.signal(sig, interrupt)
              for sig in stop_signals.STOP_SIGNALS}
  try:
    yield
  finally:
    for sig, handler in previous.items():
      signal.signal(sig, handler)


# A stop signal that came while the runner could not act on it (inside
# Popen): raised as soon as it can (_raise_deferred_stop).
_deferral = {'depth': 0, 'pending': None}


@contextlib.contextmanager
def _stop_deferred():
  _deferral['depth'] += 1
  try:
    yield
  finally:
    _deferral['depth'] -= 1


def _raise_deferred_stop():
  name, _deferral['pending'] = _deferral['pending'], None
  if name:
    raise KeyboardInterrupt(name)


def _worth_reporting(outcomes):
  """The runs failed, run again, and still disturbed after their last try."""
  return ([o for o in outcomes if not o.ok], [o for o in outcomes if o.reruns],
          [o for o in outcomes if o.still_disturbed is not None])


def anything_to_report(outcomes):
  """Does failure_report say more than the tally (bisect prints it then)?"""
  return any(_worth_reporting(outcomes))


def failure_report(outcomes):
  """The closing lines: a tally, how quiet the runs were, and every failed
  run again."""
  failed, rerun, busy = _worth_reporting(outcomes)
  lines = ['%d of %d runs succeeded' % (len(outcomes) - len(failed),
                                        len(outcomes))]
  if rerun or busy:
    # Runs and tries apart: one run tried three times is one run, two
    # tries set aside.
    lines.append(
        '%d run(s) were run again (tries set aside in all: %d) because other '
        'processes used more of the CPU than allowed during their timed loop '
        '(the tries\' records are in %s/); %d still were after the last try '
        '(kept: compare names them)' % (
            len(rerun), sum(o.reruns for o in rerun),
            quiet_runs.DISTURBED_FOLDER, len(busy)))
  if failed:
    lines.append('failed runs:')
    lines += ['  %s (%d/%d): %s; log %s' % (o.run.name, o.run.repeat_index,
                                           o.run.repeat_count, o.failure,
                                           o.log_path) for o in failed]
  return '\n'.join(lines)
