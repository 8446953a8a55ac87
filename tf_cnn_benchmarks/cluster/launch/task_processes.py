"""The launcher's child processes: start them, relay their output, wait, stop.

A task is a local process (Task) or a process on another host that an ssh
client runs for us (RemoteTask); the supervisor treats both alike.

Teardown is unconditional: on success, failure, Ctrl-C or SIGTERM every
child is stopped (SIGTERM to its process group, SIGKILL after a grace
period), and each child is also tied to the launcher's life by
PR_SET_PDEATHSIG, so even a SIGKILLed launcher leaves no orphans on Linux.
A remote task is stopped by closing its ssh channel, which its guard on the
far side (ssh_remote.py) takes as "stop the task"; one whose end could not
be confirmed over that channel is killed over a fresh ssh connection, and
the launcher names any it still cannot confirm gone.
"""

import concurrent.futures
import hmac
import json
import re
import secrets
import signal
import subprocess
import sys
import threading
import time

from results import record_io
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.launch import launch_summary
from tf_cnn_benchmarks.cluster.launch import process_groups
from tf_cnn_benchmarks.cluster.launch import ssh_remote
from tf_cnn_benchmarks.liveness import console

# A remote task's ssh channel closes this much later than the task ends.
REMOTE_EXTRA_GRACE_SECONDS = 10.0
# A remote task whose ssh channel ended without its exit status exits with
# this, as ssh does when it loses the connection.
SSH_LOST = 255


class Task:
  """One child process and what it printed."""

  # What the child reads: nothing (a remote task's channel is a pipe).
  stdin = subprocess.DEVNULL
  # Where it runs, for the placement and the summary.
  host = 'local'

  def __init__(self, label, job, address, argv):
    self.label = label
    self.job = job
    self.address = address
    self.argv = argv
    self.process = None
    self.lines = []
    self.reader = None
    self.stopped_by_launcher = False
    # When the launcher first saw it exited (time.monotonic()).
    self.exited_at = None
    # Does every step need every worker (role.lockstep)?
    self.lockstep = True

  @property
  def trains(self):
    return self.job in (roles.WORKER, roles.CONTROLLER)

  def returncode(self):
    code = self.process.poll() if self.process else None
    if code is not None and self.exited_at is None:
      self.exited_at = time.monotonic()
    return code

  def failed(self):
    """Exited with an error of its own (not stopped by the launcher)."""
    code = self.returncode()
    return code not in (None, 0) and not self.stopped_by_launcher

  def exit_description(self):
    code = self.returncode()
    if code is not None and code < 0:
      return 'killed by %s' % signal.Signals(-code).name
    return 'exit %s' % code

  def take_line(self, line):
    """None: ``line`` is the task's output, to show and keep; True: a
    line of the task's guard, taken; a string: a line that claims to be
    its guard's, refused for that reason."""
    del line
    return None

  def send_token(self):
    """Right after the start: a remote task's guard reads its token."""

  def shown(self, line):
    return line

  def terminate(self):
    process_groups.kill_group(self.process.pid, signal.SIGTERM)

  def kill(self):
    process_groups.kill_group(self.process.pid, signal.SIGKILL)

  def confirm_gone(self):
    """None when the task is known to be gone, else why it may not be."""
    return None


class RemoteTask(Task):
  """A task on another host: ``argv`` is the ssh command running it under
  ssh_remote's guard; ``reap_argv(pid, tag)`` an ssh command that kills
  the task's processes there and prints "gone" once they are.

  The channel carries the task's output and its guard's lines alike, so
  a guard line is believed only with this task's token (sent to the
  guard on its stdin, never printed by the task) and in its strict
  grammar: a pid once, as the guard's first line (it is the guard's
  direct child; `reap` kills only processes carrying the task's tag, so
  not even a reused pid is killed); records under a record file name; one
  exit status. Anything else is refused and reported."""

  stdin = subprocess.PIPE

  def __init__(self, label, job, address, argv, host, reap_argv):
    super().__init__(label, job, address, argv)
    self.host = host
    self.reap_argv = reap_argv
    self.remote_pid = None
    self.remote_code = None  # the task's own exit status, from its guard
    self.records = []  # (file name, record) sent back by the guard
    self.records_dir = None  # where the guard keeps them on the host
    self.token = secrets.token_hex(16)
    # The reader thread acks; the launcher's thread sends stop.
    self._stdin_lock = threading.Lock()
    self._guard_lines = 0  # taken so far

  def returncode(self):
    # Only once its output is drained: the exit status is its last line.
    if self.reader is not None and self.reader.is_alive():
      return None
    code = super().returncode()
    if code is None or self.remote_code is not None:
      return code if code is None else self.remote_code
    return SSH_LOST  # The channel ended before the task's exit status.

  def exit_description(self):
    if self.returncode() is not None and self.remote_code is None:
      ssh = self.process.returncode
      return 'ssh connection to %s lost (ssh %s)%s' % (
          self.host, 'killed by %s' % signal.Signals(-ssh).name if ssh < 0
          else 'exit %d' % ssh,
          '; its records, if it wrote any, stay on %s in %s' % (
              self.host, self.records_dir) if self.records_dir else '')
    return super().exit_description()

  def send_token(self):
    try:
      self.process.stdin.write((self.token + '\n').encode())
      self.process.stdin.flush()
    except OSError:
      pass  # ssh is gone already: the task's end says so

  def take_line(self, line):
    if not line.startswith(ssh_remote.MARK):
      return None
    token, _, rest = line[len(ssh_remote.MARK):].partition(' ')
    if not hmac.compare_digest(token.encode(), self.token.encode()):
      return "not its guard's: without this task's token"
    kind, _, payload = rest.partition(' ')
    refused = self._take(kind, payload)
    self._guard_lines += 1
    return refused or True

  def shown(self, line):
    """``line`` as the launcher may print it: without the token."""
    return line.replace(self.token, '<token>')

  def _take(self, kind, payload):
    """None when the guard line was taken, else why it was refused."""
    if kind == 'started':
      if self._guard_lines or self.remote_pid is not None:
        return 'a started line comes first, once'
      if not re.match(r'^[1-9][0-9]*$', payload):
        return 'not a pid'
      self.remote_pid = int(payload)
    elif kind == 'records_dir':
      if self.records_dir is not None:
        return 'records_dir said twice'
      if not re.match(r'^/[\w./-]*/%s\w+$' % ssh_remote.RECORDS_PREFIX,
                      payload):
        return 'not a records folder of the guard: %r' % payload
      self.records_dir = payload
    elif kind == 'record':
      name, _, text = payload.partition(' ')
      if not record_io.is_record_file_name(name):
        return 'not a record file name: %r' % name
      try:
        rec = json.loads(text)
      except ValueError:
        rec = None
      if not isinstance(rec, dict):
        return 'a record that is not a JSON object'
      self.records.append((name, rec))
    elif kind == 'exit':
      if self.remote_code is not None:
        return 'exit status said twice'
      if not re.match(r'^-?[0-9]+$', payload):
        return 'not an exit status'
      self.remote_code = int(payload)
      # Every record came before this line: the guard may drop its copy.
      self._tell(ssh_remote.ACK, close=True)
    else:
      return 'no such guard line'
    return None

  def _tell(self, word, close=False):
    with self._stdin_lock:
      try:
        self.process.stdin.write(word + b'\n')
        self.process.stdin.flush()
        if close:
          self.process.stdin.close()
      except (OSError, ValueError):
        pass  # ssh is gone already (or the channel was closed): said so

  def terminate(self):
    # The channel stays open: the guard stops the task, sends its records
    # and keeps them until the ack.
    self._tell(ssh_remote.STOP)

  def confirm_gone(self):
    if self.remote_code is not None:
      return None
    if self.remote_pid is None:
      return 'it may have started on %s before its ssh connection ended' % (
          self.host)
    try:
      out = subprocess.run(self.reap_argv(self.remote_pid,
                                          ssh_remote.tag_of(self.token)),
                           capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=30)
    except subprocess.TimeoutExpired:
      return 'ssh to %s to kill it (pid %d) did not answer' % (
          self.host, self.remote_pid)
    if out.stdout.strip().endswith('gone'):
      return None
    return 'ssh to %s to kill it (pid %d) said: %s' % (
        self.host, self.remote_pid,
        (out.stdout + out.stderr).strip() or 'exit %d' % out.returncode)


# Remote tasks the teardown asks about at once (see Supervisor.teardown).
_CONFIRMING_AT_ONCE = 8


class Supervisor:
  """Runs the tasks as children until the run ends, then stops them all."""

  def __init__(self, tasks, out=None):
    self.tasks = tasks
    self.out = out or sys.stdout
    self.lock = threading.Lock()
    self.stop_signal = None

  def say(self, text):
    with self.lock:
      console.write('[launch] %s\n' % text, self.out)

  def _pump(self, task):
    for raw in task.process.stdout:
      line = raw.decode(errors='replace').rstrip('\n')
      taken = task.take_line(line)
      if taken is True:
        continue
      if taken:
        # The task printed it (or relayed it from a peer): said, escaped,
        # and otherwise ignored.
        self.say('refused a line of %s that claims to come from its guard '
                 '(%s): %s' % (task.label, taken,
                               _shortened(failures.printable(
                                   task.shown(line)))))
        continue
      task.lines.append(line)
      with self.lock:
        try:
          console.write('[%s] %s\n' % (task.label, line), self.out)
        except (OSError, ValueError):
          # Our own output is gone (e.g. a closed pipe): keep draining the
          # task's, or it would block on a full pipe.
          pass

  def start(self):
    env = process_groups.child_env()
    for task in self.tasks:
      task.process = subprocess.Popen(
          task.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
          stdin=task.stdin, env=env, start_new_session=True,
          preexec_fn=process_groups.die_with_parent)
    for task in self.tasks:
      task.send_token()
    # Readers start after every fork: forking with threads running is what
    # preexec_fn must not do.
    for task in self.tasks:
      task.reader = threading.Thread(target=self._pump, args=(task,),
                                     daemon=True)
      task.reader.start()

  def handle_signal(self, signum, frame):
    del frame
    self.stop_signal = signal.Signals(signum).name

  def wait(self, ps_exit_grace, timeout, failure_grace):
    """Waits for the run to end; returns a reason when it had to stop it.

    ``failure_grace``: once a task failed that the others cannot train
    without, how long they get to end by themselves (each names the lost
    task in its own record) before being stopped: the tasks' own bound,
    deadlines.lost_peer_end_seconds.
    """
    started = time.monotonic()
    first_failure = None
    trainers_done_at = None
    while True:
      if self.stop_signal:
        return 'stopped by %s' % self.stop_signal
      now = time.monotonic()
      if timeout and now - started > timeout:
        return '--timeout of %.0f s reached' % timeout
      codes = {t.label: t.returncode() for t in self.tasks}
      if all(c is not None for c in codes.values()):
        return None
      if first_failure is None and self._cluster_cannot_go_on():
        first_failure = now
        first = launch_summary.first_failure_of(self.tasks)
        self.say('%s failed first (%s); the others get %.0f s to finish' % (
            first.label, first.exit_description(), failure_grace))
      if first_failure is not None and (
          now - first_failure > failure_grace):
        return 'a task failed; stopping the others'
      trainers = [t for t in self.tasks if t.trains]
      if trainers_done_at is None and all(
          t.returncode() is not None for t in trainers):
        trainers_done_at = now
      if trainers_done_at is not None and (
          now - trainers_done_at > ps_exit_grace):
        return ('serving task(s) still running %.0f s after training '
                'ended' % ps_exit_grace)
      time.sleep(0.1)

  def _cluster_cannot_go_on(self):
    """Has a task failed that the others cannot train without?

    Asynchronous parameter-server training carries on without a worker
    (the survivors report it and finish); anything else needs every task.
    """
    if all(t.returncode() is not None for t in self.tasks if t.trains):
      return False  # Training is over; the serving tasks just leave.
    failed = [t for t in self.tasks if t.failed()]
    return any(t.lockstep or t.job != roles.WORKER for t in failed)

  def teardown(self):
    """Stops every child still running: SIGTERM, grace, SIGKILL.

    Returns {label: why} of the tasks not confirmed gone (remote ones).
    """
    running = [t for t in self.tasks if t.process and t.returncode() is None]
    for task in running:
      task.stopped_by_launcher = True
      task.terminate()
    # A remote task's guard has its own grace (the same KILL_GRACE_SECONDS),
    # then needs a moment to send back its records.
    deadline = time.monotonic() + process_groups.KILL_GRACE_SECONDS + (
        REMOTE_EXTRA_GRACE_SECONDS if any(
            isinstance(t, RemoteTask) for t in running) else 0)
    for task in running:
      try:
        task.process.wait(max(0.0, deadline - time.monotonic()))
      except subprocess.TimeoutExpired:
        pass
    for task in running:
      if task.process.poll() is None:
        task.kill()
        task.process.wait()
    for task in self.tasks:
      if task.reader:
        task.reader.join(timeout=2)
    # Each remote confirmation is an ssh call of up to 30 s: asked at once,
    # hosts that do not answer cost one wait, not one each. At most
    # _CONFIRMING_AT_ONCE connections at a time: sshd drops new ones past
    # its MaxStartups (10 unauthenticated, by default), and many tasks may
    # share one host.
    started = [t for t in self.tasks if t.process]
    with concurrent.futures.ThreadPoolExecutor(
        max(1, min(len(started), _CONFIRMING_AT_ONCE))) as pool:
      whys = list(pool.map(lambda task: task.confirm_gone(), started))
    return {task.label: why for task, why in zip(started, whys) if why}


def _shortened(text, most=200):
  return text if len(text) <= most else text[:most] + '...'
