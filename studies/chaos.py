"""Chaos soak: N seeded random faults in real clusters, every one checked.

  sudo .venv/bin/python studies/chaos.py --trials 100 --seed 1

Each trial starts a small loopback cluster (1-3 ps, 2-8 workers; sync or
async; parameter_server, distributed_replicated or collective_all_reduce;
checkpoints on or off; or, for a signal fault, the tf2 engine's
MultiWorkerMirroredStrategy or ParameterServerStrategy with its coordinator,
chaos_tf2.py), each task in its own session, lets it train, and
injects one fault into one task at a random time: SIGKILL, SIGSTOP, SIGTERM
(mid-run or during start-up), its network link down for good or for a few
seconds (the task alone in a network namespace), a full disk under
--train_dir, a corrupt TFRecord, or a ps killed while the chief saves every
step. Then it checks what RELIABILITY.md promises:

  bounded   every task exited within its bound (chaos_plan.bounds, from the
            runtime's own constants) with the exit code of the cause;
  cause     the first failure (the launcher's rule) names the injected task,
            and every worker's record names it; a fault the cluster must
            survive (a healed link, a lost async worker) leaves the run
            going;
  orphans   no process of any task's session is left;
  records   every run record a worker wrote parses, says the status of its
            exit code, and no half-written (.tmp) file is left;
  resume    with checkpoints on, a new cluster restores the latest
            checkpoint and starts from its step.

It prints a table and exits 1 if any invariant failed, listing each failed
trial's seed: `chaos.py --seed S --trials 1` replays it. Needs root
(network namespaces, tmpfs).

An ssh_drop trial runs its cluster through the ssh launcher instead, on
namespace hosts with real sshd, and silences one task's ssh connection for
longer than ssh's old give-up (studies/chaos_ssh.py; it also needs OpenSSH
and iptables, else it is not run and says what to install).
"""

import argparse
import dataclasses
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
# Before TensorFlow loads (chaos_plan reads serving_task's constants).
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import chaos_faults  # pylint: disable=g-import-not-at-top
import chaos_plan  # pylint: disable=g-import-not-at-top
import chaos_ssh  # pylint: disable=g-import-not-at-top
import chaos_tf2  # pylint: disable=g-import-not-at-top
from tests.cluster import helpers  # pylint: disable=g-import-not-at-top
from tests.cluster import netns  # pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.cluster.launch import launch_summary  # pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.cluster.launch import launcher  # pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.cluster.launch import task_processes  # pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.cluster.task import runtime  # pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.run import record  # pylint: disable=g-import-not-at-top

INVARIANTS = ('bounded', 'cause', 'orphans', 'records', 'resume')
_DISPLAY_LINE = re.compile(r'^\d+\t', re.M)
_LOCATING = runtime.LOCATING
# A task's first line once its server is up (runtime.begin; a ps:
# serving_task's device summary).
_STARTED_LINE = re.compile(r'^(?:Cluster task |Devices: )', re.M)
# A tf2 task that must wait to join (a MultiWorkerMirroredStrategy worker,
# the ParameterServerStrategy coordinator) says "Cluster task" only once
# joined; its watchdog's first "... still <phase> (N s so far)" line
# (phases.py; in a MultiWorkerMirroredStrategy join, only once the join
# returns) dates its start N s back.
_WAITING_LINE = re.compile(r'^\.\.\. still .*\((\d+) s so far\)$', re.M)


class Unavailable(RuntimeError):
  """This machine cannot make the trial's fault (no root, no netns)."""


def _unavailable(why):
  raise Unavailable(why)


@dataclasses.dataclass
class Outcome:
  trial: chaos_plan.Trial
  problems: dict   # invariant -> [what failed]
  worst: float     # the largest exit time / bound of the trial
  seconds: float   # the trial's wall time


class Cluster:
  """The trial's task processes, their logs, and when each exited."""

  def __init__(self, trial, directory, addresses, prefixes, own_flags,
               common):
    self.trial, self.addresses = trial, addresses
    self.logs, self.tasks, self.exited = {}, {}, {}
    # When each task said its server was up: its start-up clock runs from
    # just before (deadlines.StartupClock, then the server), so start-up
    # bounds count from here, not from a guess at Python's start.
    self.started = {}
    for label in trial.labels:
      job, index = re.match(r'(\D+)(\d+)$', label).groups()
      self.logs[label] = os.path.join(directory, label + '.log')
      argv = [helpers.SCRIPT] + common + own_flags.get(label, []) + [
          '--job_name=' + job, '--task_index=' + index]
      task = task_processes.Task(label, job, addresses[label], argv)
      task.process = helpers.start(argv, prefix=prefixes.get(label, ()),
                                   log_path=self.logs[label])
      self.tasks[label] = task

  def poll(self):
    """Notes every start and exit (time.monotonic()); True when all have
    exited."""
    for label in self.tasks:
      if label in self.started:
        continue
      log = self.log(label)
      up = _STARTED_LINE.search(log)
      waiting = _WAITING_LINE.search(log) if self.trial.tf2 else None
      if waiting and not (up and up.start() < waiting.start()):
        self.started[label] = time.monotonic() - int(waiting.group(1))
      elif up:
        self.started[label] = time.monotonic()
    for label, task in self.tasks.items():
      if label not in self.exited and task.process.poll() is not None:
        self.exited[label] = time.monotonic()
        task.exited_at = self.exited[label]
    return len(self.exited) == len(self.tasks)

  def wait(self, predicate, seconds):
    """Polls until ``predicate()`` or ``seconds``; True if it held."""
    deadline = time.monotonic() + seconds
    while True:
      self.poll()
      if predicate():
        return True
      if time.monotonic() > deadline:
        return False
      time.sleep(0.1)

  def log(self, label):
    return helpers.read(self.logs[label])

  def steps_shown(self, labels):
    return sum(len(_DISPLAY_LINE.findall(self.log(l))) for l in labels)

  def pid(self, label):
    return self.tasks[label].process.pid

  def workers(self):
    """The tasks that train (a tf2 ParameterServerStrategy trial: its
    coordinator, controller0)."""
    return [l for l in self.tasks if l in self.trial.trainers]

  def kill_all(self):
    helpers.kill([t.process for t in self.tasks.values()])
    self.poll()


def _addresses(trial, isolated):
  """{label: host:port}; with ``isolated`` the victim is alone on the
  netns pair's first address, everyone else on the second."""
  if not isolated:
    ports = launcher.free_ports('127.0.0.1', len(trial.labels))
    return {l: '127.0.0.1:%d' % p for l, p in zip(trial.labels, ports)}
  return {l: '%s:%d' % (netns.PS_ADDRESS if l == trial.victim else
                        netns.WORKER_ADDRESS, 2222 + i)
          for i, l in enumerate(trial.labels)}


def _host_flags(addresses, trial):
  jobs = {'ps': [], 'worker': [], 'controller': []}
  for label in trial.labels:
    jobs[label.rstrip('0123456789')].append(addresses[label])
  flags = ['--worker_hosts=' + ','.join(jobs['worker'])]
  if jobs['ps']:
    flags.append('--ps_hosts=' + ','.join(jobs['ps']))
  if jobs['controller']:
    # As the launcher starts it (launcher.build_tasks).
    flags.append('--controller_host=' + jobs['controller'][0])
  return flags


def run_trial(trial, work, bound_of, ps_extra, say):
  """Runs ``trial`` in ``work``; its Outcome."""
  started = time.monotonic()
  directory = os.path.join(work, 'trial-%d' % trial.seed)
  shutil.rmtree(directory, ignore_errors=True)
  os.makedirs(directory)
  result_dir = os.path.join(directory, 'records')
  train_dir = os.path.join(directory, 'train')
  expect = chaos_plan.expectations(trial, (bound_of, ps_extra))
  problems = {name: [] for name in INVARIANTS}
  events = {}
  if trial.fault == 'ssh_drop':
    # Through the ssh launcher on namespace hosts: studies/chaos_ssh.py.
    try:
      worst = chaos_ssh.run_trial(trial, directory, result_dir, train_dir,
                                  expect, problems, say, _unavailable)
      if trial.checkpoints:
        _check_resume(trial, train_dir, directory, problems)
    except Unavailable as e:
      problems['bounded'].append('not run: %s' % e)
      worst = 0.0
    return Outcome(trial, {k: v for k, v in problems.items() if v}, worst,
                   time.monotonic() - started)
  isolated = trial.fault in ('link_down', 'link_blip')
  rng = random.Random(trial.seed)
  disk = chaos_faults.SmallDisk(train_dir) if trial.fault == 'disk_full' \
      else None
  # The victim's own --result_dir, full before it starts (finding 1).
  full = chaos_faults.SmallDisk(
      os.path.join(directory, 'full_records'), size='1m') if (
          trial.fault == 'result_dir_full') else None
  namespaces = netns.veth_namespaces(_unavailable) if isolated else None
  cluster = None
  try:
    sides = namespaces.__enter__() if namespaces else None
    for small in (disk, full):
      if small:
        small.__enter__()
    if full:
      full.fill()
    addresses = _addresses(trial, isolated)
    prefixes = {l: ['ip', 'netns', 'exec', sides[0] if l == trial.victim
                    else sides[1]] for l in trial.labels} if sides else {}
    own_flags = {}
    settings = trial.flag_settings()
    if trial.checkpoints:
      settings['train_dir'] = train_dir
    if trial.real_data:
      good = chaos_faults.imagenet_shards(os.path.join(work, 'imagenet'))
      bad = os.path.join(directory, 'corrupt')
      chaos_faults.corrupt_copy(good, bad, rng)
      own_flags = {l: ['--data_dir=' + (bad if l == trial.victim else good)]
                   for l in trial.labels}
    if full:
      own_flags = {trial.victim: ['--result_dir=' + full.path]}
    common = helpers.tiny_flags(result_dir, **settings) + _host_flags(
        addresses, trial)
    cluster = Cluster(trial, directory, addresses, prefixes, own_flags,
                      common)
    _inject(trial, cluster, events, expect, disk, sides, problems, say)
    cap = chaos_plan.trial_cap_seconds(bound_of)
    if not cluster.wait(cluster.poll, cap):
      problems['bounded'].append('still running %.0f s after the fault: %s'
                                 % (cap, sorted(set(cluster.tasks) -
                                                set(cluster.exited))))
    sessions = {t.process.pid for t in cluster.tasks.values()}
    cluster.kill_all()
    left = chaos_faults.session_members(sessions)
    if left:
      problems['orphans'].append('left: %s' % left)
      for pid in left:
        try:
          os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
          pass
    worst = _check_exits(trial, cluster, expect, events, problems)
    _check_cause(trial, cluster, problems)
    _check_records(trial, cluster, expect, result_dir, problems)
    if trial.checkpoints:
      saved = os.path.join(directory, 'saved')
      if disk:
        disk.copy_to(saved)
      elif os.path.isdir(train_dir):
        shutil.copytree(train_dir, saved)
      _check_resume(trial, saved, directory, problems)
  except Unavailable as e:
    problems['bounded'].append('not run: %s' % e)
    worst = 0.0
  finally:
    if cluster is not None:
      cluster.kill_all()
    for small in (disk, full):
      if small:
        small.__exit__(None, None, None)
    # A real-sized corrupt copy is 250 MB: a long soak keeps only logs.
    shutil.rmtree(os.path.join(directory, 'corrupt'), ignore_errors=True)
    if namespaces:
      namespaces.__exit__(None, None, None)
  return Outcome(trial, {k: v for k, v in problems.items() if v}, worst,
                 time.monotonic() - started)


def _inject(trial, cluster, events, expect, disk, sides, problems, say):
  """Waits for training, injects the fault, and drives what follows it
  (heal, resume, stop); ``events`` gets each reference time."""
  victim = trial.victim
  if trial.fault in ('sigterm_startup', 'corrupt_record'):
    cluster.wait(lambda: False, trial.delay)
  else:
    trained = cluster.wait(
        lambda: all(_DISPLAY_LINE.search(cluster.log(w))
                    for w in cluster.workers()) or len(cluster.exited),
        chaos_plan.STARTUP_TIMEOUT * 2)
    if not trained or cluster.exited:
      problems['bounded'].append('the cluster never trained (exited: %s)'
                                 % sorted(cluster.exited))
    cluster.wait(lambda: False, trial.delay)
  if trial.fault == 'sigterm_startup' and _DISPLAY_LINE.search(
      cluster.log(victim) if victim in trial.trainers else ''):
    say('  (the start-up SIGTERM came after training began)')
  if victim in cluster.exited:
    # Nothing to inject (the cluster failed by itself): no crash of the soak.
    problems['bounded'].append('%s exited before its fault (%s)' % (
        victim, cluster.tasks[victim].exit_description()))
    return
  pid = cluster.pid(victim)
  events[chaos_plan.FAULT] = time.monotonic()
  fault = trial.fault
  if fault in ('sigkill', 'ps_kill_in_save'):
    os.kill(pid, signal.SIGKILL)
  elif fault in ('sigterm', 'sigterm_startup', 'result_dir_full'):
    os.kill(pid, signal.SIGTERM)
  elif fault == 'sighup':
    os.kill(pid, signal.SIGHUP)  # its terminal closed
  elif fault == 'malformed_note':
    events[chaos_plan.FAULT] = chaos_faults.forge_note(trial,
                                                       cluster.addresses)
  elif fault == 'sigstop':
    os.kill(pid, signal.SIGSTOP)
  elif fault in ('link_down', 'link_blip'):
    netns.set_link(sides[0], up=False)
  elif fault == 'disk_full':
    disk.fill()
  others = [w for w in cluster.workers() if w != victim]
  if fault == 'corrupt_record':
    # The record is read when the pipeline reaches it (its shuffle buffer
    # fills first): the bounds count from the reader's word that it is
    # locating it (its provisional note is on the board by then).
    cluster.wait(lambda: _LOCATING in cluster.log(victim) or (
        victim in cluster.exited), chaos_plan.trial_cap_seconds(
            chaos_plan.bounds()[0]))
    if _LOCATING in cluster.log(victim):
      events[chaos_plan.DATA_FAILED] = time.monotonic()
    else:
      problems['cause'].append('%s never said it was %s' % (victim,
                                                            _LOCATING))
  if fault in ('corrupt_record', 'disk_full'):
    # These end the victim by itself, when it next reads or saves.
    cluster.wait(lambda: victim in cluster.exited, expect[victim].bound)
    events[chaos_plan.VICTIM_EXIT] = cluster.exited.get(victim)
    if fault == 'corrupt_record' and None not in (
        events.get(chaos_plan.DATA_FAILED), cluster.exited.get(victim)):
      say('  (%s located the record and left %.1f s after it said it was '
          'locating it)' % (victim, cluster.exited[victim] -
                            events[chaos_plan.DATA_FAILED]))
  if fault == 'link_blip':
    cluster.wait(lambda: False, trial.blip_seconds)
    netns.set_link(sides[0], up=True)
  if trial.carries_on:
    # The survivors must train on: more steps shown after the fault (and
    # the heal) than before.
    before = cluster.steps_shown(others)
    cluster.wait(lambda: False, chaos_plan.CARRY_ON_SECONDS)
    if cluster.steps_shown(others) <= before:
      problems['cause'].append('the run did not go on after %s' % fault)
    early = [l for l in cluster.exited if l != victim]
    if early:
      problems['cause'].append('exited before the stop: %s' % ', '.join(
          '%s (%s)' % (l, cluster.tasks[l].exit_description())
          for l in sorted(early)))
    if fault == 'sigstop':
      os.kill(pid, signal.SIGCONT)
    events[chaos_plan.STOP] = time.monotonic()
    # A worker cut off for good must end by itself (partition).
    stopped = [w for w in cluster.workers()
               if not (fault == 'link_down' and w == victim)]
    for label in stopped:
      if label not in cluster.exited:
        try:
          os.kill(cluster.pid(label), signal.SIGTERM)
        except ProcessLookupError:
          pass
  elif fault == 'sigstop':
    # The others end (stall); then the frozen task wakes to an empty
    # cluster and must leave too.
    bound = expect[others[0]].bound if others else 0
    cluster.wait(lambda: all(w in cluster.exited for w in others), bound)
    os.kill(pid, signal.SIGCONT)
    events[chaos_plan.RESUME] = time.monotonic()


def _check_exits(trial, cluster, expect, events, problems):
  """Each task's exit code and time against its Expect; the worst ratio."""
  worst = 0.0
  for label, task in cluster.tasks.items():
    want = expect[label]
    code = task.process.returncode
    since = (cluster.started.get(label) if want.since == chaos_plan.OWN_START
             else events.get(want.since))
    if since is None and want.since == chaos_plan.OWN_START and (
        label != trial.victim):
      problems['bounded'].append('%s never said its server was up' % label)
    took = cluster.exited[label] - since if since is not None else None
    if took is not None:
      worst = max(worst, took / want.bound)
    if code not in want.codes:
      problems['bounded'].append(
          '%s: %s, expected exit %s (%s)' % (
              label, task.exit_description(),
              ' or '.join(str(c) for c in sorted(want.codes)), want.why))
    if took is not None and took > want.bound:
      problems['bounded'].append(
          '%s: exited %.1f s after the %s; its bound is %.0f s (%s)' % (
              label, took, want.since, want.bound, want.why))
  return worst


def _check_cause(trial, cluster, problems):
  """The launcher's first failure is the victim (a fault the cluster
  survives: nobody but the victim failed before the stop)."""
  if trial.carries_on:
    return  # checked while it trained on (_inject)
  for task in cluster.tasks.values():
    task.lines = cluster.log(task.label).splitlines()
  first = launch_summary.first_failure_of(list(cluster.tasks.values()))
  if first is None or first.label != trial.victim:
    problems['cause'].append('first failure: %s, expected %s (%s)' % (
        first.label if first else 'none', trial.victim, ' '.join(
            launch_summary.describe_first_failure(first))[:200]
        if first else ''))


def _check_records(trial, cluster, expect, result_dir, problems):
  """Every task that trains (Trial.trainers) and exited by itself left one
  parseable record that says its exit; it names the victim as the failure
  or the lost peer."""
  by_task = chaos_faults.records_by_task(result_dir, problems)
  for label in cluster.workers():
    code = cluster.tasks[label].process.returncode
    if code is None or code < 0:
      continue  # killed by a signal: no record is possible
    if trial.fault == 'result_dir_full' and label == trial.victim:
      # Its record cannot be written: one clear line instead, no
      # traceback, and the run's own exit (checked against its Expect).
      log = cluster.log(label)
      said = [l for l in log.splitlines()
              if record.NOT_WRITTEN in l]
      if len(said) != 1 or 'Traceback' in log:
        problems['records'].append(
            '%s (full --result_dir): %d "Could not write" lines%s' % (
                label, len(said), ', a traceback' if 'Traceback' in log
                else ''))
      continue
    rec = by_task.get(label)
    if rec is None:
      problems['records'].append('%s exited %d without a record' % (
          label, code))
      continue
    status = chaos_plan.STATUS_OF_CODE.get(code)
    if rec.get('status') != status:
      problems['records'].append('%s exited %d but its record says %r' % (
          label, code, rec.get('status')))
    failure = rec.get('failure') or {}
    lost = [f.get('task') for f in rec.get('peer_failures') or []]
    if label == trial.victim or trial.fault == 'link_blip':
      continue
    if trial.carries_on:
      if trial.fault in chaos_plan.STOPPED_LIKE_SIGTERM + (
          'sigkill', 'disk_full', 'corrupt_record',
          'malformed_note') and trial.victim not in lost:
        problems['cause'].append('%s\'s record does not list %s among its '
                                 'peer failures (%s)' % (label, trial.victim,
                                                         lost))
    elif expect[label].failure_task and (
        failure.get('task') != expect[label].failure_task):
      problems['cause'].append('%s\'s record names %r, not %s: %s' % (
          label, failure.get('task'), expect[label].failure_task,
          str(failure.get('message'))[:160]))


def _check_resume(trial, saved, directory, problems):
  """A new cluster on a copy of the train_dir starts from its latest
  checkpoint's step."""
  index = os.path.join(saved, 'checkpoint')
  if not os.path.exists(index):
    return  # nothing was saved before the fault
  m = re.search(r'model_checkpoint_path: "[^"]*-(\d+)"', helpers.read(index))
  if not m:
    problems['resume'].append('unreadable checkpoint index: %s' %
                              helpers.read(index)[:200])
    return
  step = int(m.group(1))
  records = os.path.join(directory, 'resumed')
  os.makedirs(records, exist_ok=True)
  code, output = helpers.launch(
      ['--ps', str(trial.num_ps), '--workers', '2'],
      helpers.tiny_flags(records, variable_update=trial.mode,
                         cross_replica_sync=trial.sync, train_dir=saved,
                         num_batches=2, **({'model': 'lenet',
                                             'data_name': 'imagenet'}
                                            if trial.real_data else {})),
      timeout=240)
  restored = re.search(
      r'\[worker0\] Restored checkpoint \S+-%d \(global step (\d+)\)' % step,
      output)
  # Asynchronous workers may step before the chief reports the step.
  if code != 0 or not restored or not (
      int(restored.group(1)) == step if trial.sync else
      int(restored.group(1)) >= step):
    said = [l for l in output.splitlines() if 'Restored' in l or
            'Run failed' in l]
    problems['resume'].append('resuming from step %d: exit %s; %s' % (
        step, code, ' | '.join(said[:3]) or output[-1500:]))


def table(outcomes, bound_of, ps_extra, replay):
  """The soak's summary lines; ``replay(seed)``: the command that replays
  a trial."""
  import pandas as pd  # pylint: disable=g-import-not-at-top
  rows = [dict(fault=o.trial.fault + (' (tf2)' if o.trial.tf2 else ''),
               **{name: name not in o.problems for name in INVARIANTS},
               worst=o.worst) for o in outcomes]
  frame = pd.DataFrame(rows)
  lines = ['', 'Bounds (from the fault, or from the stop / resume / the '
           'victim\'s exit):'] + chaos_plan.describe_bounds(bound_of, ps_extra)
  if any(o.trial.tf2 for o in outcomes):
    lines += chaos_tf2.describe_bounds()
  summary = pd.DataFrame({
      'trials': frame.groupby('fault').size(),
      **{name: frame.groupby('fault')[name].sum() for name in INVARIANTS},
      'worst exit/bound': frame.groupby('fault')['worst'].max().round(2)})
  summary.loc['all'] = [len(frame)] + [frame[n].sum() for n in INVARIANTS] + [
      round(frame['worst'].max(), 2)]
  lines += ['', 'Trials by fault; each invariant column counts the trials '
            'where it held:', summary.to_string()]
  failed = [o for o in outcomes if o.problems]
  lines += ['', '%d of %d trials held every invariant.' % (
      len(outcomes) - len(failed), len(outcomes))]
  for o in failed:
    lines.append('FAILED seed %d (%s): replay with %s' % (
        o.trial.seed, o.trial.describe(), replay(o.trial.seed)))
    for name, items in sorted(o.problems.items()):
      for item in items:
        lines.append('  %s: %s' % (name, item))
  return lines


def _stop_soak(signum, frame):
  del frame
  raise KeyboardInterrupt('chaos.py stopped by %s' % signal.Signals(signum).name)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--trials', type=int, default=10)
  parser.add_argument('--seed', type=int, default=1,
                      help='trial i uses seed SEED+i')
  parser.add_argument('--max_workers', type=int, default=8,
                      help='workers per trial: 2..this')
  parser.add_argument('--work_dir', default='',
                      help='where trials run (default: a temporary '
                           'directory, removed at the end)')
  parser.add_argument('--seeds', default='',
                      help='comma-separated seeds: exactly these trials '
                           '(instead of --trials from --seed; CI\'s sample)')
  parser.add_argument('--fault', choices=chaos_plan.FAULTS, default=None,
                      help='only this fault (the rest of each trial is '
                           'still drawn from its seed)')
  args = parser.parse_args(argv)
  try:
    seeds = ([int(s) for s in args.seeds.split(',')] if args.seeds else
             list(range(args.seed, args.seed + args.trials)))
  except ValueError:
    parser.error('--seeds %r: expected whole numbers separated by commas'
                 % args.seeds)
  if not seeds or args.max_workers < 2:
    parser.error('--trials must be >= 1 and --max_workers >= 2')
  if os.geteuid() != 0:
    print('chaos.py needs root: network namespaces (ip netns) and tmpfs '
          'mounts. Run it as root, e.g. sudo %s %s' % (
              sys.executable, ' '.join(sys.argv)), file=sys.stderr)
    return 2
  # Stopped from outside, the soak still tears its trial down (tasks,
  # tmpfs, namespaces: the finally clauses), as it demands of the runtime.
  signal.signal(signal.SIGTERM, _stop_soak)
  signal.signal(signal.SIGHUP, _stop_soak)
  work = args.work_dir or tempfile.mkdtemp(prefix='chaos_')
  bound_of, ps_extra = chaos_plan.bounds()
  print('Chaos soak: %d trials %s, in %s' % (
      len(seeds), 'of seeds ' + args.seeds if args.seeds else
      'from seed %d' % args.seed, work))

  def run_one(i, seed):
    trial = chaos_plan.plan(seed, args.max_workers, args.fault)
    print('[%d/%d] seed %d: %s (delay %.1f s%s)' % (
        i + 1, len(seeds), trial.seed, trial.describe(), trial.delay,
        ', down %.1f s' % trial.blip_seconds if trial.blip_seconds
        else ''))
    sys.stdout.flush()
    outcome = run_trial(trial, work, bound_of, ps_extra,
                        lambda text: print(text))
    print('  %s in %.0f s; worst exit/bound %.2f%s' % (
        'FAILED' if outcome.problems else 'ok', outcome.seconds,
        outcome.worst, ''.join('\n    %s: %s' % (k, v) for k, items in
                               sorted(outcome.problems.items())
                               for v in items)))
    sys.stdout.flush()
    return outcome

  try:
    outcomes, stopped = run_trials(seeds, run_one)
  finally:
    if not args.work_dir:
      shutil.rmtree(work, ignore_errors=True)

  def replay(seed):
    return 'studies/chaos.py --seed %d --trials 1 --max_workers %d%s' % (
        seed, args.max_workers, ' --fault ' + args.fault if args.fault else '')

  if stopped:
    print('\n%s after %d of %d trials; the table counts the %d that ended '
          '(the one under way is left out).' % (
              stopped, len(outcomes), len(seeds), len(outcomes)))
  if outcomes:
    for line in table(outcomes, bound_of, ps_extra, replay):
      print(line)
  if stopped:
    return 130
  return 1 if any(o.problems for o in outcomes) else 0


def run_trials(seeds, run_one):
  """(outcomes, why it stopped or None): ``run_one(i, seed)`` of every
  seed in turn. A soak stopped (SIGINT, SIGTERM, SIGHUP: hours of trials
  stopped for time) keeps the outcomes of the trials that ended, so its
  table is still printed."""
  outcomes = []
  try:
    for i, seed in enumerate(seeds):
      outcomes.append(run_one(i, seed))
  except KeyboardInterrupt as stop:
    return outcomes, str(stop) or 'chaos.py stopped by SIGINT'
  return outcomes, None


if __name__ == '__main__':
  sys.exit(main())
