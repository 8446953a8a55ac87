"""The chaos soak's tf2-engine trials: which faults they take, their tasks,
and what each task must then do (RELIABILITY.md, "The tf2 engine in a
cluster").

chaos_plan draws every trial as before, then turns some into tf2 trials
here (``adjust``), keeping the fault it drew when tf2 takes that fault:

  * collective_all_reduce: MultiWorkerMirroredStrategy. Workers only, each
    step an all-reduce over every one of them (lockstep); worker 0 hosts
    TensorFlow's coordination service and the progress board.
  * parameter_server (a graph trial of parameter_server or
    distributed_replicated): ParameterServerStrategy. The ps tasks and
    workers only serve; the coordinator, controller0, is the one task that
    trains, prints steps and writes a record. --sync_updates=barrier or
    asynchronous: either way a lost worker is survivable.

No checkpoints: --train_dir is the graph engine's alone
(flag_specs.GRAPH_ENGINE_ONLY). Bounds come from the runtime's constants
plus chaos_plan.LOAD_SLACK_SECONDS, as the graph trials' do.
"""

import dataclasses

import chaos_plan
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.liveness import watchdog

GRAPH, TF2 = 'graph', 'tf2'
# Of the trials whose fault tf2 takes, this share runs the tf2 engine.
SHARE = 0.3
MIRRORED, PARAMETER_SERVER = 'collective_all_reduce', 'parameter_server'
CONTROLLER = 'controller0'
# Faults whose tf2 outcome RELIABILITY.md states (SIGHUP stops a task as
# SIGTERM does: liveness/stop_request.STOP_SIGNALS).
_FAULTS = ('sigkill', 'sigstop', 'sigterm', 'sigterm_startup', 'sighup')
_STOPPED = ('sigterm', 'sighup')
# MultiWorkerMirroredStrategy's chief: it hosts the coordination service
# and the progress board (tf2_runtime.py).
_BOARD_HOST = 'worker0'


def faults():
  """The soak's faults a tf2 trial takes."""
  return tuple(f for f in _FAULTS if f in chaos_plan.FAULTS)


def adjust(trial, rng):
  """``trial`` (a graph trial of a fault in faults()) as a tf2 one, the
  rest drawn from ``rng``."""
  mode = MIRRORED if trial.mode == MIRRORED else PARAMETER_SERVER
  trial = dataclasses.replace(trial, engine=TF2, mode=mode,
                              checkpoints=False)
  if mode == PARAMETER_SERVER:
    # The graph's draw never names the coordinator: draw again.
    trial = dataclasses.replace(trial, victim=rng.choice(_victims(trial)))
  return trial


def _victims(trial):
  """The tasks of a ParameterServerStrategy trial its fault may strike."""
  if trial.fault == 'sigstop':
    # Not the coordinator: its port still accepts, so the serving tasks
    # wait for it as for a slow one (nothing RELIABILITY.md bounds).
    return [l for l in trial.labels if l != CONTROLLER]
  if trial.fault == 'sigterm_startup':
    # Not a worker: the coordinator, which may be training by then (a
    # tf2 task starts in seconds), carries on without it, so the trial
    # would owe either outcome.
    return [l for l in trial.labels if not l.startswith('worker')]
  return trial.labels


def extra_labels(trial):
  """Tasks a tf2 trial has beyond its ps tasks and workers."""
  return [CONTROLLER] if trial.mode == PARAMETER_SERVER else []


def trainers(trial):
  """The tasks that train: they print steps, write records, get the stop."""
  if trial.mode == PARAMETER_SERVER:
    return [CONTROLLER]
  return [l for l in trial.labels if l.startswith('worker')]


def lockstep(trial):
  # The coordinator runs a lost worker's steps on the others, barrier or
  # not (roles.ClusterRole.lockstep).
  return trial.mode == MIRRORED


def carries_on(trial):
  """A ParameterServerStrategy worker that is gone (not frozen: its step
  never returns) costs the coordinator nothing but its share."""
  return (trial.mode == PARAMETER_SERVER and
          trial.victim.startswith('worker') and
          trial.fault in ('sigkill',) + _STOPPED)


def flag_settings(trial):
  settings = dict(engine=TF2)
  if trial.mode == PARAMETER_SERVER and trial.sync:
    # tf2 has no synchronous mean over ps tasks (flag_checks refuses it).
    settings.update(sync_updates='barrier')
  return settings


def describe(trial):
  if trial.mode == MIRRORED:
    cluster = 'MultiWorkerMirroredStrategy %dw' % trial.num_workers
  else:
    cluster = 'ParameterServerStrategy %dps/%dw+coordinator %s' % (
        trial.num_ps, trial.num_workers,
        'barrier' if trial.sync else 'async')
  return 'tf2 %s: %s %s' % (cluster, trial.fault, trial.victim)


def bounds():
  """{cause: seconds} of the tf2 runtime alone (each + slack)."""
  # TensorFlow's modules, loaded once chaos_plan.bounds() has loaded it.
  from tf_cnn_benchmarks.cluster.task import runtime  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster.task import tf2_runtime  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster.watch import root_cause  # pylint: disable=g-import-not-at-top
  heartbeat = (tf2_runtime.HEARTBEAT_TIMEOUT_SECONDS +
               root_cause.PEER_FAILURE_WAIT_SECONDS + watchdog.TICK_SECONDS)
  raw = {
      # A frozen worker: the coordination service hears no heartbeat and
      # aborts the all-reduce; the root cause search takes its verdict.
      'heartbeat': heartbeat,
      # ... and the board's host then waits for the frozen task's note as
      # for any peer's (runtime.BOARD_HOST_WAIT_SECONDS).
      'heartbeat_host': heartbeat + runtime.BOARD_HOST_WAIT_SECONDS,
  }
  return {k: v + chaos_plan.LOAD_SLACK_SECONDS for k, v in raw.items()}


def describe_bounds():
  return ['  tf2 %-14s %3.0f s' % kv for kv in sorted(bounds().items())]


def expectations(trial, bound_of, ps_extra):
  """{label: chaos_plan.Expect} of every task of the tf2 ``trial``."""
  if trial.mode == MIRRORED:
    return _mirrored(trial, bound_of, ps_extra)
  return _parameter_server(trial, bound_of, ps_extra)


def _codes(*codes):
  return frozenset(codes)


def _victim(trial, bound_of):
  """How the victim itself ends, or None (it is resumed: see callers)."""
  fault = trial.fault
  if fault == 'sigkill':
    return chaos_plan.Expect(_codes(-9), chaos_plan.FAULT,
                             chaos_plan.KILLED_EXIT_SECONDS, 'SIGKILLed')
  if fault in _STOPPED + ('sigterm_startup',):
    # TensorFlow's preemption notifier takes SIGTERM; the stop request
    # takes it back (a serving task: early_signals).
    return chaos_plan.Expect(_codes(exit_codes.INTERRUPTED), chaos_plan.FAULT,
                             bound_of['signal'], 'SIGTERM: interrupted')
  return None


def _startup(trial, bound_of, ps_extra):
  """(since, bound) of a start-up fault: a tf2 task's start-up has the same
  bound as a graph task's (--startup_timeout, the start-up guard), so it is
  timed as a graph trial's bystander is, and follows it."""
  graph = dataclasses.replace(trial, engine=GRAPH, mode=MIRRORED, num_ps=0,
                              num_workers=2, victim='worker0')
  want = chaos_plan.expectations(graph, (bound_of, ps_extra))['worker1']
  return want.since, want.bound


def _mirrored(trial, bound_of, ps_extra):
  victim, fault = trial.victim, trial.fault
  out = {victim: _victim(trial, bound_of) or chaos_plan.Expect(
      # sigstop: resumed once the others left.
      _codes(exit_codes.RUN_FAILED, exit_codes.STALLED,
             exit_codes.UNREACHABLE), chaos_plan.RESUME, bound_of['stall'],
      'resumed after the others left: its peers are gone or it stalled')}
  since = chaos_plan.FAULT
  if fault == 'sigkill':
    # Its port refuses the probes (or the aborted all-reduce's root cause
    # search finds it so).
    bound, codes = bound_of['gone'], _codes(exit_codes.RUN_FAILED)
    why = '%s killed: gone' % victim
  elif fault in _STOPPED:
    bound = bound_of['signal'] + bound_of['gone']
    codes, why = _codes(exit_codes.RUN_FAILED), '%s stopped first' % victim
  elif fault == 'sigstop' and victim == _BOARD_HOST:
    # It leads the coordination service: the others' heartbeats to it
    # time out, and they name it (tf2_runtime._frozen_peer).
    bound, codes = bounds()['heartbeat'], _codes(exit_codes.STALLED)
    why = '%s frozen: its heartbeats time out' % victim
  elif fault == 'sigstop':
    bound, codes = bounds()['heartbeat'], _codes(exit_codes.STALLED)
    why = '%s frozen: no heartbeat' % victim
    out[_BOARD_HOST] = chaos_plan.Expect(
        codes, since, bounds()['heartbeat_host'], why, victim)
  else:  # sigterm_startup: never registered (4), or gone once it had (1)
    since, bound = _startup(trial, bound_of, ps_extra)
    codes = _codes(exit_codes.UNREACHABLE, exit_codes.RUN_FAILED)
    why = '%s left during start-up' % victim
  for label in trial.labels:
    out.setdefault(label, chaos_plan.Expect(codes, since, bound, why, victim))
  return out


def _parameter_server(trial, bound_of, ps_extra):
  victim, fault = trial.victim, trial.fault
  signal, expect = bound_of['signal'], chaos_plan.Expect
  # A serving task whose one client, the coordinator, is gone: its port
  # refused twice (serving_task.ClientWatch).
  left = ps_extra + chaos_plan.LOAD_SLACK_SECONDS
  out = {victim: _victim(trial, bound_of) or expect(
      # sigstop: resumed once the coordinator left, it finds the "done"
      # queued while it was stopped, or the coordinator gone.
      _codes(exit_codes.OK, exit_codes.RUN_FAILED), chaos_plan.RESUME, left,
      'resumed after the coordinator left: it is done or gone')}
  # Serving tasks leave when the coordinator says done, on any exit but
  # SIGKILL (also a SIGTERM: runtime._leave).
  done = _codes(exit_codes.OK)
  if trial.fault == 'sigterm_startup':
    # Unless it never connected: then it never appeared (4), or its port
    # was seen and then refused (1).
    done = _codes(exit_codes.OK, exit_codes.RUN_FAILED,
                  exit_codes.UNREACHABLE)
  if victim == CONTROLLER:
    if fault == 'sigkill':
      serving = expect(_codes(exit_codes.RUN_FAILED), chaos_plan.FAULT, left,
                       '%s killed: gone' % victim)
    elif fault in _STOPPED:
      serving = expect(done, chaos_plan.FAULT, signal + ps_extra,
                       '%s stopped: it says done' % victim)
    else:  # sigterm_startup
      since, bound = _startup(trial, bound_of, ps_extra)
      serving = expect(done, since, bound + ps_extra,
                       '%s left during start-up' % victim)
  else:
    if carries_on(trial):
      out[CONTROLLER] = expect(_codes(exit_codes.INTERRUPTED), chaos_plan.STOP,
                               signal, 'trained on, then stopped')
    elif fault == 'sigkill':
      out[CONTROLLER] = expect(_codes(exit_codes.RUN_FAILED), chaos_plan.FAULT,
                               bound_of['gone'], '%s killed: gone' % victim,
                               victim)
    elif fault in _STOPPED:
      out[CONTROLLER] = expect(_codes(exit_codes.RUN_FAILED), chaos_plan.FAULT,
                               signal + bound_of['gone'],
                               '%s stopped: gone' % victim, victim)
    elif fault == 'sigstop':
      # Its step on the frozen task never returns (TensorFlow's coordinator
      # has no deadline): the stall report's gRPC check names it.
      out[CONTROLLER] = expect(_codes(exit_codes.STALLED), chaos_plan.FAULT,
                               bound_of['stall'], '%s frozen: stall' % victim,
                               victim)
    else:  # sigterm_startup: never answered (4), or gone once it had (1)
      since, bound = _startup(trial, bound_of, ps_extra)
      out[CONTROLLER] = expect(
          _codes(exit_codes.UNREACHABLE, exit_codes.RUN_FAILED), since, bound,
          '%s left during start-up' % victim, victim)
    coordinator = out[CONTROLLER]
    serving = expect(done, coordinator.since, coordinator.bound + ps_extra,
                     'its coordinator is done')
  for label in trial.labels:
    out.setdefault(label, serving)
  return out
