"""What one chaos trial does, and what every task of it must then do.

A trial is drawn from its seed alone (``plan(seed)``), so `chaos.py --seed S
--trials 1` replays it. Its expectations come from the runtime's own
constants and functions (the watchdog's tick and signal grace, the peer
probes, the ps's give-up time, the step deadline, the root-cause wait, the
re-scan's limit), never from numbers typed here: when the runtime's bounds
change, the soak follows. Only LOAD_SLACK_SECONDS is ours (5 s, as issue 29
asks): a loaded 2-core machine is late by that much. The bounds count from
an event the soak sees (the fault, the stop, a task's own line that its
server is up, a reader's line that it is locating a bad record), so no
bound holds a guess at how long Python and TensorFlow take to start.

TensorFlow is loaded for some of those constants (once).
"""

import argparse
import dataclasses
import random
import re
from typing import Dict, FrozenSet, Optional

import chaos_tf2
import preprocessing
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.cluster.watch import cluster_watch
from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster.launch import ssh_hosts
from tf_cnn_benchmarks.cluster.watch import reachability
from tf_cnn_benchmarks.cluster.watch import root_cause
from tf_cnn_benchmarks.cluster.watch import startup_guard
from tf_cnn_benchmarks.liveness import watchdog

MODES = ('parameter_server', 'distributed_replicated', 'collective_all_reduce')
FAULTS = ('sigkill', 'sigstop', 'sigterm', 'sigterm_startup', 'link_down',
          'link_blip', 'disk_full', 'corrupt_record', 'ps_kill_in_save',
          'sighup', 'result_dir_full', 'malformed_note', 'ssh_drop')
# Faults that stop the victim as SIGTERM does (a closed terminal; SIGTERM
# to a worker whose --result_dir is full): the same outcome is owed.
STOPPED_LIKE_SIGTERM = ('sigterm', 'sighup', 'result_dir_full')
# The trials' timeouts: short, so every bound is tens of seconds.
STARTUP_TIMEOUT = 60
STALL_TIMEOUT = 15
STALL_SHUTDOWN_TIMEOUT = 10
SAVE_MODEL_SECS = 2
# A loaded 2-core machine (and Python start-up) is late by up to this much.
LOAD_SLACK_SECONDS = 5.0
# A SIGKILLed task is gone at once; the soak sees it by polling, which a
# loaded machine delays (1.2 s was seen at a load of 12).
KILLED_EXIT_SECONDS = 3.0
# Carry-on trials (nothing the cluster must die of) train this long after
# the fault, then every worker gets SIGTERM ("the stop").
CARRY_ON_SECONDS = 8.0
# An ssh link drop lasts this much longer than ssh's give-up without the
# run's bound (so that give-up would have ended the run), at least and at
# most (ssh_drop_seconds).
SSH_DROP_PAST_GIVE_UP_SECONDS = (1.0, 9.0)

# Reference events a task's exit is timed from.
FAULT, STOP, RESUME, VICTIM_EXIT = 'fault', 'stop', 'resume', 'victim exit'
# A task's own start-up clock starts (each task's own event: the line that
# says its server is up), so start-up bounds need no guess at how long
# Python and TensorFlow take to load.
OWN_START = 'its own start'
# A corrupt record's reader says it is locating the record (runtime.py).
DATA_FAILED = 'victim locating'
OK_CODES = frozenset([exit_codes.OK])
STATUS_OF_CODE = {exit_codes.OK: 'ok', exit_codes.RUN_FAILED: 'failed',
                  exit_codes.STALLED: 'stalled',
                  exit_codes.UNREACHABLE: 'unreachable',
                  exit_codes.INTERRUPTED: 'interrupted'}


@dataclasses.dataclass(frozen=True)
class Trial:
  seed: int
  mode: str
  num_ps: int
  num_workers: int
  sync: bool
  checkpoints: bool
  fault: str
  victim: str          # 'ps1', 'worker0', ...
  delay: float         # s after training started (start-up faults: after start)
  blip_seconds: float  # link_blip, ssh_drop: how long the link stays down
  engine: str = chaos_tf2.GRAPH  # --engine: 'graph' or 'tf2' (chaos_tf2)

  @property
  def labels(self):
    return (['ps%d' % i for i in range(self.num_ps)] +
            ['worker%d' % i for i in range(self.num_workers)] +
            (chaos_tf2.extra_labels(self) if self.tf2 else []))

  @property
  def tf2(self):
    return self.engine == chaos_tf2.TF2

  @property
  def trainers(self):
    """The tasks that train: they print steps, write records, get the
    stop."""
    if self.tf2:
      return chaos_tf2.trainers(self)
    return ['worker%d' % i for i in range(self.num_workers)]

  @property
  def lockstep(self):
    """Does every step need every worker (the runtime's role.lockstep)?"""
    if self.tf2:
      return chaos_tf2.lockstep(self)
    return self.sync or self.mode == 'collective_all_reduce'

  @property
  def real_data(self):
    return self.fault == 'corrupt_record'

  @property
  def carries_on(self):
    """Must the cluster train on after this fault (then be stopped)?"""
    if self.fault in ('link_blip', 'ssh_drop'):
      return True
    if self.tf2:
      return chaos_tf2.carries_on(self)
    # An asynchronous cluster trains on without a worker, whatever ended
    # it; not before training (the start barrier waits for every worker).
    return not (self.victim.startswith('ps') or self.lockstep or
                self.fault == 'sigterm_startup')

  def describe(self):
    if self.tf2:
      return chaos_tf2.describe(self)
    return '%s %dps/%dw %s%s: %s %s' % (
        self.mode, self.num_ps, self.num_workers,
        'sync' if self.sync else 'async', ' +ckpt' if self.checkpoints else '',
        self.fault, self.victim)

  def flag_settings(self):
    """Benchmark flags (helpers.tiny_flags overrides) every task gets."""
    settings = dict(
        variable_update=self.mode, cross_replica_sync=self.sync,
        num_batches=10 ** 7, display_every=10,
        startup_timeout=STARTUP_TIMEOUT, stall_timeout=STALL_TIMEOUT,
        stall_shutdown_timeout=STALL_SHUTDOWN_TIMEOUT)
    if self.real_data:
      settings.update(model='lenet', data_name='imagenet')
    if self.tf2:
      settings.update(chaos_tf2.flag_settings(self))
    if self.checkpoints:
      # A kill "during a save": the chief saves after every step.
      if self.fault == 'ps_kill_in_save':
        settings.update(save_model_steps=1)
      else:
        settings.update(save_model_secs=SAVE_MODEL_SECS)
    return settings


def plan(seed, max_workers=8, only_fault=None):
  """The trial of ``seed`` (the same seed, the same trial); ``only_fault``
  replaces the fault drawn."""
  rng = random.Random(seed)
  mode = rng.choice(MODES)
  with_ps = mode != 'collective_all_reduce'
  num_ps = rng.randint(1, 3) if with_ps else 0
  num_workers = rng.randint(2, max(2, max_workers))
  sync = rng.random() < 0.6 if with_ps else True
  fault = rng.choice(FAULTS)
  fault = only_fault or fault
  if fault == 'ps_kill_in_save' and not with_ps:
    fault = 'sigkill'
  checkpoints = fault in ('disk_full', 'ps_kill_in_save') or rng.random() < .5
  if fault == 'disk_full':
    victim = 'worker0'  # only the chief writes --train_dir
  elif fault == 'ps_kill_in_save':
    victim = 'ps%d' % rng.randrange(num_ps)
  elif fault in ('corrupt_record', 'result_dir_full', 'malformed_note'):
    # Only workers read data, write records and have a note on the board.
    victim = 'worker%d' % rng.randrange(num_workers)
  else:
    labels = (['ps%d' % i for i in range(num_ps)] +
              ['worker%d' % i for i in range(num_workers)])
    victim = rng.choice(labels)
  # (A corrupt record strikes when it is read: at the start.)
  delay = rng.uniform(1.0, 8.0) if fault == 'sigterm_startup' else (
      0.0 if fault == 'corrupt_record' else rng.uniform(0.0, 4.0))
  blip = rng.uniform(2.0, STALL_TIMEOUT - 4.0) if fault == 'link_blip' else 0
  if fault == 'ssh_drop':
    # After every other draw: the draws above stay those of the other kinds.
    blip = rng.uniform(*ssh_drop_seconds())
  trial = Trial(seed, mode, num_ps, num_workers, sync, checkpoints, fault,
                victim, round(delay, 2), round(blip, 2))
  # Drawn last, so a graph trial is the one its seed always drew; a fault
  # tf2 does not take keeps it a graph trial.
  tf2 = rng.random() < chaos_tf2.SHARE
  if tf2 and fault in chaos_tf2.faults():
    trial = chaos_tf2.adjust(trial, rng)
  return trial


@dataclasses.dataclass(frozen=True)
class Expect:
  """How one task must end: an exit code in ``codes`` within ``bound`` s
  of the ``since`` event; a worker's record with ``failure_task`` (when
  set) as the failure it names."""
  codes: FrozenSet[int]
  since: str
  bound: float
  why: str
  failure_task: Optional[str] = None


def _params():
  return flags.make_params(stall_timeout=STALL_TIMEOUT,
                           stall_shutdown_timeout=STALL_SHUTDOWN_TIMEOUT,
                           startup_timeout=STARTUP_TIMEOUT)


def ssh_give_up_seconds(silent_seconds=None):
  """How long the launcher's ssh keeps a silent connection: its
  keep-alives unanswered (ssh_hosts.Ssh's options, with the launcher's
  defaults; ``silent_seconds``: the run's bound it is given)."""
  parser = argparse.ArgumentParser()
  ssh_hosts.add_arguments(parser)
  args = parser.parse_args([])
  ssh = (ssh_hosts.Ssh(args) if silent_seconds is None else
         ssh_hosts.Ssh(args, silent_seconds))
  count = int(re.search(r'ServerAliveCountMax=(\d+)',
                        ' '.join(ssh.options)).group(1))
  return count * ssh_hosts.ALIVE_INTERVAL_SECONDS


def ssh_drop_seconds():
  """(shortest, longest) ssh_drop: longer than ssh's give-up without a
  run's bound (the old fixed 15 s, which ended a run on any such drop), and
  shorter, by the load slack, than the run's own lost-peer bound (its ssh
  keep-alives wait that long): a drop the run must survive."""
  old = ssh_give_up_seconds()
  lost_peer = deadlines.lost_peer_end_seconds(_params())
  run = min(lost_peer, ssh_give_up_seconds(lost_peer))
  low, high = (old + s for s in SSH_DROP_PAST_GIVE_UP_SECONDS)
  return low, min(high, run - LOAD_SLACK_SECONDS)


def bounds():
  """{cause: seconds} from the runtime's own constants (each + slack)."""
  from tf_cnn_benchmarks.cluster.task import serving_task  # pylint: disable=g-import-not-at-top
  tick = watchdog.TICK_SECONDS
  raw = {
      # The watchdog acts on a signal the main thread has not.
      'signal': watchdog.SIGNAL_GRACE_SECONDS + tick,
      # A peer's failure note, read once a tick with a bounded read.
      'note': tick + cluster_watch.BOARD_READ_SECONDS,
      # Bad data: the reader's provisional note at once; its peers wait
      # that long for the fuller one before they take it.
      'data': (tick + cluster_watch.BOARD_READ_SECONDS +
               root_cause.PEER_FAILURE_WAIT_SECONDS),
      # ... and the reader itself re-reads shards for at most this long.
      'rescan': preprocessing.RESCAN_SECONDS + tick,
      # A peer gone: suspected after a quiet spell, then refused twice.
      'gone': (cluster_watch.SUSPECT_AFTER_SECONDS +
               (reachability.REFUSALS_TO_GONE + 1) * tick +
               cluster_watch.BOARD_READ_SECONDS),
      # No progress: the step's own deadline (report, shutdown, backstop).
      'stall': deadlines.step_deadline_seconds(_params()),
      'startup': STARTUP_TIMEOUT + startup_guard.STARTUP_GRACE_SECONDS,
      # A full disk fails the chief's next save.
      'save': SAVE_MODEL_SECS + tick,
  }
  # A ps leaves once its clients are done, or refuse connections (a client
  # behind a partition: after the step deadline, as a worker would).
  ps_extra = ((reachability.REFUSALS_TO_GONE + 1) *
              serving_task.PROBE_EVERY_SECONDS)
  return {k: v + LOAD_SLACK_SECONDS for k, v in raw.items()}, ps_extra


def expectations(trial, bound_of=None) -> Dict[str, Expect]:
  """{label: Expect} of every task of ``trial``."""
  bound_of, ps_extra = bound_of or bounds()
  if trial.tf2:
    return chaos_tf2.expectations(trial, bound_of, ps_extra)
  victim, fault = trial.victim, trial.fault
  victim_is_ps = victim.startswith('ps')
  out = {}
  codes = lambda *c: frozenset(c)  # pylint: disable=unnecessary-lambda-assignment
  if fault == 'ssh_drop':
    # The drop ends nothing (ssh waits out the run's own bound); the stop,
    # SIGTERM to the launcher, ends every task, a ps too (its guard
    # signals it), by the signal bound.
    return {label: Expect(codes(exit_codes.INTERRUPTED), STOP,
                          bound_of['signal'],
                          'its ssh link came back; the launcher was stopped')
            for label in trial.labels}

  # The victim itself.
  if fault in ('sigkill', 'ps_kill_in_save'):
    out[victim] = Expect(codes(-9), FAULT, KILLED_EXIT_SECONDS, 'SIGKILLed')
  elif fault in STOPPED_LIKE_SIGTERM + ('sigterm_startup',):
    # A ps too (liveness/early_signals.py), from its first line.
    out[victim] = Expect(codes(exit_codes.INTERRUPTED), FAULT,
                         bound_of['signal'], 'SIGTERM: interrupted')
  elif fault == 'sigstop':
    if trial.carries_on:
      out[victim] = Expect(codes(exit_codes.INTERRUPTED), STOP,
                           bound_of['signal'], 'resumed, then stopped')
    else:
      out[victim] = Expect(
          codes(exit_codes.RUN_FAILED, exit_codes.STALLED,
                exit_codes.UNREACHABLE), RESUME, bound_of['stall'],
          'resumed after the others left: its peers are gone or it stalled')
  elif fault == 'link_down':
    out[victim] = Expect(
        codes(exit_codes.UNREACHABLE) if victim_is_ps
        else codes(exit_codes.STALLED, exit_codes.UNREACHABLE), FAULT,
        bound_of['stall'] + (ps_extra if victim_is_ps else 0),
        'cut off: partition')
  elif fault == 'link_blip':
    pass  # A bystander like the others (below).
  elif fault == 'disk_full':
    out[victim] = Expect(codes(exit_codes.RUN_FAILED), FAULT,
                         bound_of['save'], 'its save fails: disk full')
  elif fault == 'malformed_note' and not trial.carries_on:
    # Healthy, it trains until its peers leave on the forged note; then
    # they are gone (or their notes name it).
    out[victim] = Expect(codes(exit_codes.RUN_FAILED), FAULT,
                         bound_of['note'] + bound_of['gone'],
                         'its note was forged: its peers left')
  elif fault == 'corrupt_record':
    out[victim] = Expect(codes(exit_codes.RUN_FAILED), DATA_FAILED,
                         bound_of['rescan'],
                         'reads the corrupt record, then locates it', victim)

  # Everyone else.
  for label in trial.labels:
    if label in out:
      continue
    is_ps = label.startswith('ps')
    extra = ps_extra if is_ps else 0.0
    if trial.carries_on:
      # Trains on; the stop ends the workers, the ps leaves by itself
      # (with 1 when a worker left without saying done).
      silent = fault == 'sigkill'
      if is_ps and fault == 'link_down':
        # Waits for the cut-off worker as long as a worker waits for a step.
        out[label] = Expect(codes(exit_codes.UNREACHABLE), FAULT,
                            bound_of['stall'] + extra,
                            'a client cut off: partition')
      elif is_ps:
        out[label] = Expect(codes(exit_codes.RUN_FAILED) if silent else
                            codes(exit_codes.OK), STOP,
                            bound_of['signal'] + extra,
                            'its clients stopped' +
                            (' or went silent' if silent else ''))
      else:
        out[label] = Expect(codes(exit_codes.INTERRUPTED), STOP,
                            bound_of['signal'], 'trained on, then stopped')
      continue
    # A fault that ends the victim by itself is timed from its exit.
    since = {'corrupt_record': DATA_FAILED, 'disk_full': VICTIM_EXIT,
             'sigterm_startup': OWN_START}.get(fault, FAULT)
    if is_ps:
      # A client stopped before its server started never appeared: 4, as
      # the workers say (_cluster_cause).
      out[label] = Expect(codes(exit_codes.OK, exit_codes.UNREACHABLE) if
                          fault == 'link_down' else codes(
                              exit_codes.OK, exit_codes.RUN_FAILED,
                              exit_codes.UNREACHABLE) if
                          fault == 'sigterm_startup' else codes(
                              exit_codes.OK, exit_codes.RUN_FAILED), since,
                          _cluster_bound(trial, bound_of) + extra,
                          'its clients are done or gone')
      continue
    cause_codes, why = _cluster_cause(trial)
    out[label] = Expect(cause_codes, since, _cluster_bound(trial, bound_of),
                        why, victim)
  return out


def _cluster_cause(trial):
  """(exit codes, why) of a worker the fault stops with the cluster."""
  fault, victim = trial.fault, trial.victim
  if fault == 'sigstop':
    return frozenset([exit_codes.STALLED]), '%s frozen: stall' % victim
  if fault == 'link_down':
    return (frozenset([exit_codes.UNREACHABLE]),
            '%s cut off: partition' % victim)
  if fault == 'sigterm_startup':
    # Missing at start-up (4), or gone once it had been seen (1).
    return (frozenset([exit_codes.UNREACHABLE, exit_codes.RUN_FAILED]),
            '%s left during start-up' % victim)
  return frozenset([exit_codes.RUN_FAILED]), '%s failed first' % victim


def _cluster_bound(trial, bound_of):
  fault = trial.fault
  if fault in ('sigstop', 'link_down'):
    return bound_of['stall']
  if fault == 'sigterm_startup':
    return bound_of['startup']  # from the task's own start (OWN_START)
  if fault in ('sigkill', 'ps_kill_in_save'):
    return bound_of['gone']
  if fault in STOPPED_LIKE_SIGTERM:
    # The victim's note (a worker) or its closed port (a ps).
    return bound_of['signal'] + bound_of['gone']
  if fault == 'corrupt_record':
    return bound_of['data']
  return bound_of['note']  # disk_full: after the victim


def trial_cap_seconds(bound_of):
  """No trial may take longer than this after its fault (then: killed)."""
  return max(bound_of.values()) * 2 + 60


def describe_bounds(bound_of, ps_extra):
  return ['  %-8s %5.0f s' % (k, v) for k, v in sorted(bound_of.items())] + [
      '  a ps task gets %.0f s more (it leaves after its clients); every '
      'bound includes %.0f s of slack for a loaded machine; start-up counts '
      'from the task\'s own line that its server is up' % (
          ps_extra, LOAD_SLACK_SECONDS)]
