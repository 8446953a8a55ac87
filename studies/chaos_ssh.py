"""The chaos soak's ssh link drop (`ssh_drop`): one task's ssh connection
silent for longer than ssh's old give-up, in a run of the real ssh launcher.

  sudo .venv/bin/python studies/chaos.py --fault ssh_drop --trials 3

The trial's cluster runs on namespace hosts (tests/cluster/fake_hosts.py:
each host a network namespace with its own address and a real sshd, the
launcher in a further namespace), one task per host, started by
`launch --hosts ...` over the real ssh client. Once every worker trains,
the victim's host drops every packet of its ssh connection (its iptables,
FakeHosts.block_ssh; the cluster's own traffic flows on) for the trial's
drop: longer than ssh's old fixed give-up, shorter than the run's own
lost-peer bound, which the launcher gives ssh's keep-alives
(chaos_plan.ssh_drop_seconds). The link comes back, the run must train on,
and SIGTERM to the launcher ("the stop") must then end it. The soak's
invariants, as this trial reads them:

  bounded  every task ended `interrupted` within the signal bound of the
           stop (its own process, watched on its host), and the launcher
           exited 130;
  cause    every worker trained on once its link was back, nothing ended
           before the stop, and the launcher names no first failure (the
           run was stopped, not failed);
  orphans  nothing is left on the hosts (any process in their namespaces
           but sshd's listener) or here (the launcher's namespace and
           session), and the launcher confirmed every task gone;
  records  every worker's record came home to the launcher's
           --result_dir, parses, says its exit and its host, and no guard
           kept a copy on its host (the launcher acked them all).

Each task's exit status is the one its guard sent, from the launcher's
summary.

Needs root, `ip`, OpenSSH (sshd, ssh, ssh-keygen) and iptables; without
them the trial is not run, and says what to install.
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time

import chaos_faults
import chaos_plan
import pytest
from tests import tools
from tests.cluster import fake_hosts
from tests.cluster import helpers
from tf_cnn_benchmarks.cluster.launch import ssh_remote

# Each task's line of the launcher's summary: its exit status (the one its
# guard sent; "stopped by the launcher: " first for a task it stopped).
_CODE_LINE = re.compile(r'^\[launch\] (\w+\d+) +(?:\S+ +)?'
                        r'(?:stopped by the launcher: )?exit (-?\d+)$', re.M)
_DISPLAY_LINE = re.compile(r'^\[(worker\d+)\] (\d+)\t', re.M)
_RECORD_LINE = re.compile(r'^\[(worker\d+)\] Run record: (\S+)$', re.M)
# The launcher's words for a task whose channel ended before its records.
_KEPT = re.compile(r'its records, if it wrote any, stay on \S+ in (/[^\s);]+)')
# sshd's session process leaves a moment after it closed the channel the
# launcher waited for: the hosts get this long before a process is an
# orphan.
_SESSION_END_SECONDS = 2.0
# How often the trial looks at the tasks' processes (their exit times),
# and at what costs more (the launcher's whole log, the link's sockets).
_POLL_SECONDS = 0.1
_LOOK_SECONDS = 0.5


def missing():
  """Why this machine cannot run the trial, with what to install; None
  when it can."""
  if os.geteuid() != 0:
    return 'namespace hosts need root (CAP_SYS_ADMIN): %s' % (
        tools.ROOT_INSTALL)
  if not shutil.which('ip'):
    return 'the `ip` command is not installed: %s' % tools.IP_INSTALL
  for command in ('sshd', 'ssh', 'ssh-keygen'):
    if not shutil.which(command) and not os.path.exists(
        '/usr/sbin/' + command):
      return 'the `%s` command is not installed: %s' % (command,
                                                       tools.SSH_INSTALL)
  if not shutil.which('iptables'):
    return 'the `iptables` command is not installed: %s' % (
        tools.IPTABLES_INSTALL)
  return None


@contextlib.contextmanager
def _namespace_hosts(folder, count, unavailable):
  """fake_hosts' hosts; what it cannot build is ``unavailable`` (it skips
  a test; here the trial is not run)."""
  hosts = fake_hosts.fake_hosts(folder, count)
  try:
    fake = hosts.__enter__()  # pylint: disable=unnecessary-dunder-call
  except (pytest.skip.Exception, pytest.fail.Exception) as e:
    unavailable(str(e))
  except AssertionError as e:
    unavailable('the namespace hosts did not start: %s' % e)
  try:
    # iptables may be there but not work in a namespace (no netfilter).
    probe = subprocess.run(
        ['ip', 'netns', 'exec', fake.hosts[0].namespace, 'iptables', '-L',
         '-n'], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
      unavailable('iptables does not work in a network namespace here: %s;'
                  ' %s' % (probe.stderr.strip(), tools.IPTABLES_INSTALL))
    yield fake
  finally:
    hosts.__exit__(None, None, None)


class _Run:
  """The launcher, its log, and the tasks' processes on the hosts."""

  def __init__(self, fake, trial, flags, log):
    self.fake, self.trial, self.log_path = fake, trial, log
    self.launcher = helpers.start(
        [helpers.SCRIPT, 'launch'] +
        fake.launcher_args() + ['--ps', str(trial.num_ps), '--workers',
                                str(trial.num_workers), '--'] + flags,
        prefix=fake.in_client(), log_path=log)
    self.pids = {}    # label -> the task's own pid on its host
    self.hosts = {}   # label -> FakeHost
    self.ended = {}   # label -> when its process was first seen gone

  def log(self):
    return helpers.read(self.log_path)

  def steps(self):
    """{worker: the highest step it has shown}."""
    shown = {}
    for label, step in _DISPLAY_LINE.findall(self.log()):
      shown[label] = max(shown.get(label, 0), int(step))
    return shown

  def workers(self):
    return [l for l in self.trial.labels if l.startswith('worker')]

  def wait(self, predicate, seconds, every=_POLL_SECONDS):
    """Until ``predicate()`` (asked every ``every`` s) or ``seconds``;
    True if it held. Notes each task's end on the way."""
    deadline = time.monotonic() + seconds
    asked = None
    while True:
      self.note_ends()
      now = time.monotonic()
      if asked is None or now - asked >= every:
        asked = now
        if predicate():
          return True
      if now > deadline:
        return False
      time.sleep(_POLL_SECONDS)

  def find_tasks(self):
    """Each task's own process and host; '' or why one is missing."""
    by_namespace = {h.namespace: h for h in self.fake.hosts}
    for label in self.trial.labels:
      job, index = re.match(r'(\D+)(\d+)$', label).groups()
      namespace, pid = self.fake.task_pid(job, int(index))
      if pid is None:
        return 'no process of %s on any host' % label
      self.pids[label], self.hosts[label] = pid, by_namespace[namespace]
    shared = len(set(h.namespace for h in self.hosts.values())) < len(
        self.hosts)
    # One task per host, or the drop would cut more than the victim.
    return 'tasks share a host: %s' % {
        l: h.address for l, h in self.hosts.items()} if shared else ''

  def note_ends(self):
    now = time.monotonic()
    for label, pid in self.pids.items():
      if label not in self.ended and not helpers.pid_alive(pid):
        self.ended[label] = now

  def codes(self):
    """{label: exit status} the launcher heard from each task's guard."""
    return {l: int(c) for l, c in _CODE_LINE.findall(self.log())}

  def link_settled(self, host):
    """Does ``host``'s ssh connection carry traffic again? After a long
    drop TCP resends only on its backed-off timer (seconds), so a stop
    sent at once could reach the task that much later: neither end of the
    connection may still be backing off."""
    ends = [(host.namespace, 'sport = :%d' % fake_hosts.SSH_PORT),
            (self.fake.client, 'dst %s' % host.address)]
    for namespace, match in ends:
      out = subprocess.run(
          ['ip', 'netns', 'exec', namespace, 'ss', '-tinH', 'state',
           'established', '( %s )' % match], capture_output=True, text=True,
          timeout=30)
      if out.returncode != 0 or 'backoff:' in out.stdout:
        return False
    return True


def run_trial(trial, directory, result_dir, train_dir, expect, problems,
              say, unavailable):
  """Runs ssh_drop ``trial`` in ``directory``; adds what failed to
  ``problems`` ({invariant: [...]}); returns the worst exit time / bound.
  ``unavailable(why)`` raises: this machine cannot run the trial."""
  why = missing()
  if why:
    unavailable(why)
  settings = trial.flag_settings()
  if trial.checkpoints:
    settings['train_dir'] = train_dir
  flags = helpers.tiny_flags(result_dir, **settings)
  folder = os.path.join(directory, 'hosts')
  os.makedirs(folder)
  events = {}
  with _namespace_hosts(folder, len(trial.labels), unavailable) as fake:
    run = _Run(fake, trial, flags, os.path.join(directory, 'launch.log'))
    try:
      _drive(run, events, problems, say)
    finally:
      helpers.kill([run.launcher])
      run.note_ends()
    _check_left(run, problems)
  worst = _check_exits(trial, run, expect, events, problems)
  _check_first_failure(run, problems)
  _check_records(run, result_dir, problems)
  return worst


def _drive(run, events, problems, say):
  """Waits for training, drops the victim's ssh link and restores it,
  lets the run train on, then stops the launcher and waits for its end."""
  trial = run.trial
  trained = run.wait(
      lambda: set(run.steps()) >= set(run.workers()) or
      run.launcher.poll() is not None, chaos_plan.STARTUP_TIMEOUT * 2,
      _LOOK_SECONDS)
  if not trained or run.launcher.poll() is not None:
    problems['bounded'].append('the cluster never trained (launcher: %s)' %
                               run.launcher.poll())
    return
  missing_task = run.find_tasks()
  if missing_task:
    problems['bounded'].append(missing_task)
    return
  run.wait(lambda: False, trial.delay)
  at_drop = run.steps()
  host = run.hosts[trial.victim]
  events[chaos_plan.FAULT] = time.monotonic()
  run.fake.block_ssh(host, blocked=True)
  try:
    run.wait(lambda: False, trial.blip_seconds)
  finally:
    run.fake.block_ssh(host, blocked=False)
  restored = time.monotonic()
  # TCP's backed-off timer doubles from the first packet lost, so its next
  # resend comes within the drop's length (plus a loaded machine's lag).
  if not run.wait(lambda: run.link_settled(host),
                  trial.blip_seconds + chaos_plan.LOAD_SLACK_SECONDS,
                  _LOOK_SECONDS):
    problems['cause'].append('%s\'s ssh connection still backing off %.0f s '
                             'after the link came back' % (
                                 trial.victim, time.monotonic() - restored))
  say('  %s\'s ssh link (%s) dropped for %.1f s; traffic again %.1f s '
      'after' % (trial.victim, host.address, restored -
                 events[chaos_plan.FAULT], time.monotonic() - restored))
  # The run goes on: every worker shows later steps, its output (the
  # victim's held back during the drop) flowing again.
  before = run.steps()
  run.wait(lambda: False, chaos_plan.CARRY_ON_SECONDS)
  after = run.steps()
  stuck = [w for w in run.workers() if after.get(w, 0) <= before.get(w, 0)]
  if stuck:
    # What each stuck worker's main thread is doing: a stall this trial
    # met once in CI (28 Nov) left nothing else to go on.
    problems['cause'].append(
        'the run did not go on after the ssh link drop: no new step of %s '
        'in %.0f s (steps shown: %s as the link dropped, %s once it was '
        'back, %s after)\n%s' % (
            ', '.join(stuck), chaos_plan.CARRY_ON_SECONDS, at_drop, before,
            after, '\n'.join(
                '    ' + line for w in stuck for line in helpers.stacks_of(
                    run.pids[w], main_only=True).splitlines())))
  early = sorted(run.ended)
  if early or run.launcher.poll() is not None:
    problems['cause'].append('ended before the stop: %s' % (
        ', '.join(early) or 'the launcher (exit %s)' % run.launcher.poll()))
  events[chaos_plan.STOP] = time.monotonic()
  run.launcher.send_signal(signal.SIGTERM)
  cap = chaos_plan.trial_cap_seconds(chaos_plan.bounds()[0])
  if not run.wait(lambda: run.launcher.poll() is not None and
                  len(run.ended) == len(run.pids), cap):
    problems['bounded'].append('still running %.0f s after the stop: %s' % (
        cap, 'the launcher' if run.launcher.poll() is None else
        sorted(set(run.pids) - set(run.ended))))
  code = run.launcher.poll()
  if code is not None and code != 130:
    problems['bounded'].append('the launcher exited %d after the stop, '
                               'expected 130 (interrupted)' % code)


def _check_left(run, problems):
  """Nothing of the trial is left: on the hosts (every process in their
  namespaces but sshd's listener), here (the launcher's namespace and
  session); the launcher confirmed every task gone. Kills what is left."""
  def left():
    found = run.fake.stray_pids()
    here = subprocess.run(['ip', 'netns', 'pids', run.fake.client],
                          capture_output=True, text=True, timeout=30)
    local = [int(p) for p in here.stdout.split()
             if helpers.pid_alive(int(p))]
    local += [p for p in chaos_faults.session_members({run.launcher.pid})
              if p not in local]
    if local:
      found['here (%s)' % run.fake.client] = local
    return found
  deadline = time.monotonic() + _SESSION_END_SECONDS
  found = left()
  while found and time.monotonic() < deadline:
    time.sleep(0.1)
    found = left()
  if found:
    problems['orphans'].append('left: %s' % '; '.join(
        '%s: %s' % (where, ', '.join('%d %s' % (p, _command(p))
                                      for p in pids))
        for where, pids in sorted(found.items())))
    for pids in found.values():
      for pid in pids:
        try:
          os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
          pass
  for line in re.findall(r'^\[launch\] could not confirm .*$', run.log(),
                         re.M):
    problems['orphans'].append(line[len('[launch] '):])


def _command(pid):
  try:
    with open('/proc/%d/cmdline' % pid, 'rb') as f:
      return f.read().replace(b'\0', b' ').decode(errors='replace')[:100]
  except OSError:
    return '(gone)'


def _check_exits(trial, run, expect, events, problems):
  """Each task's exit status (from its guard, through the launcher) and
  the time its process ended, against its Expect; the worst ratio."""
  codes = run.codes()
  worst = 0.0
  for label in trial.labels:
    want = expect[label]
    code = codes.get(label)
    if code is None:
      problems['bounded'].append('%s: the launcher heard no exit status' %
                                 label)
    elif code not in want.codes:
      problems['bounded'].append('%s: exit %d, expected exit %s (%s)' % (
          label, code, ' or '.join(str(c) for c in sorted(want.codes)),
          want.why))
    since = events.get(want.since)
    if since is None or label not in run.ended:
      continue
    took = run.ended[label] - since
    worst = max(worst, took / want.bound)
    if took > want.bound:
      problems['bounded'].append(
          '%s: exited %.1f s after the %s; its bound is %.0f s (%s)' % (
              label, took, want.since, want.bound, want.why))
  return worst


def _check_first_failure(run, problems):
  """A stopped run has no first failure: no task failed (an ssh
  connection lost would be one, 255)."""
  said = re.findall(r'^\[launch\] (First failure: .*|.* failed first .*)$',
                    run.log(), re.M)
  if said:
    problems['cause'].append('first failure: %s, expected none (the run was '
                             'stopped, not failed)' % ' | '.join(said)[:300])


def _check_records(run, result_dir, problems):
  """Every worker's record is in the launcher's --result_dir: whole,
  parseable, its status its exit's, from its host; no guard kept one."""
  codes = run.codes()
  by_task = chaos_faults.records_by_task(result_dir, problems)
  for label in run.workers():
    record = by_task.get(label)
    if record is None:
      problems['records'].append('%s: no record came home (exit %s)' % (
          label, codes.get(label)))
      continue
    status = chaos_plan.STATUS_OF_CODE.get(codes.get(label))
    if record.get('status') != status:
      problems['records'].append('%s exited %s but its record says %r' % (
          label, codes.get(label), record.get('status')))
    host = run.hosts.get(label)
    if host and record.get('launched_on') != host.address:
      problems['records'].append('%s\'s record says it ran on %r, not %s' % (
          label, record.get('launched_on'), host.address))
  # A guard deletes its copy only once the launcher acked the records. The
  # hosts share this file system: its folder (as the task's "Run record"
  # line, or the launcher's line for a lost task, named it) must be gone.
  log = run.log()
  folders = {os.path.dirname(p): l for l, p in _RECORD_LINE.findall(log)}
  for folder in _KEPT.findall(log):
    folders.setdefault(folder, 'a lost task')
  for kept, label in sorted(folders.items()):
    if os.path.basename(kept).startswith(
        ssh_remote.RECORDS_PREFIX) and os.path.isdir(kept):
      problems['records'].append('%s: its guard kept its records in %s (the '
                                 'launcher did not ack them)' % (label, kept))
      shutil.rmtree(kept, ignore_errors=True)
