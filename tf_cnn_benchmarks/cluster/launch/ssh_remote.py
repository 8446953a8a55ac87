"""The far end of the ssh launcher: what runs on each host, under sshd.

  python -m tf_cnn_benchmarks.cluster.launch.ssh_remote preflight --ports 2300,2301
  python -m tf_cnn_benchmarks.cluster.launch.ssh_remote task -- BENCHMARK FLAGS
  python -m tf_cnn_benchmarks.cluster.launch.ssh_remote reap PID

`preflight` answers the launcher's checks in one marked line: this host's
harness and TensorFlow versions, and which of the given ports are taken.

`task` runs one cluster task under a small guard, because sshd does not
reliably signal the remote command when the connection drops (without a pty
it sends no SIGHUP). The guard:
  - reads the run's token, the first line of its stdin (the launcher's
    secret for this task, never in an argv or the task's environment),
    and starts each marked line it prints with it: the task's output
    passes through the same channel, and a line the task prints (or
    relays from a peer) must not pass for the guard's;
  - starts the task in its own process group (tied to the guard's life by
    PR_SET_PDEATHSIG), with --result_dir set to a fresh local folder;
  - says where that folder is (`records_dir`, after `started`);
  - reads its own stdin, which is the ssh channel: a `stop` line (the
    launcher's teardown) or end of file (the launcher died, or the
    connection is gone) stops the task: SIGTERM to its group, SIGKILL after
    a grace; SIGTERM/SIGINT/SIGHUP to the guard do the same;
  - when the task has ended, sends back each run record it wrote and its
    exit status as marked lines on stdout (the same ssh channel: no shared
    file system needed), and removes the folder only when the launcher
    answers `ack`: records that may not have arrived stay on the host, in
    the folder `records_dir` named, and the launcher says so.
The launcher reads the marked lines (task_processes.RemoteTask); every
other line is the task's own output.

`reap` is the launcher's last resort when a task's channel ended without
its exit status: it SIGKILLs the processes of the task's process group (the
task's pid, as `started` said) that carry the task's tag (TAG_ENV, set by
the guard: a pid reused since by another process is left alone) and prints
"gone" once none is left.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from tf_cnn_benchmarks.cluster.launch import process_groups
from tf_cnn_benchmarks.liveness import stop_request

# Starts every line the guard prints, then the run's token (TOKEN_RE).
MARK = '@@tf_cnn_benchmarks '
TOKEN_RE = re.compile(r'^[0-9a-f]{32}$')
# The task's environment variable holding its tag (``tag_of`` its token):
# what `reap` recognises the task's processes by.
TAG_ENV = 'TF_CNN_BENCHMARKS_GUARD_TAG'
# The launcher's lines after the token: stop the task; its records and
# exit status arrived.
STOP, ACK = b'stop', b'ack'
# How long the guard waits for ACK after its exit line before it keeps the
# records where they are (the launcher acks as soon as it reads the line).
ACK_WAIT_SECONDS = 10
# The records' folder on the host (records_dir, sent after `started`).
RECORDS_PREFIX = 'tf_cnn_benchmarks-records-'


_out_lock = threading.Lock()


def _write(line):
  """One whole line to the launcher; the connection may be gone already."""
  with _out_lock:
    try:
      sys.stdout.buffer.write(line)
      sys.stdout.buffer.flush()
    except (OSError, ValueError):
      pass


def send(kind, payload, token=None):
  """A marked line; a task's guard lines carry its run's token."""
  _write(('%s%s%s %s\n' % (MARK, token + ' ' if token else '', kind,
                            payload)).encode())


def tag_of(token):
  """The task's tag: names its processes for `reap` (an argv, seen by
  anyone on the host) without giving the token away."""
  return hashlib.sha256(token.encode()).hexdigest()[:16]


def _read_token():
  """The first line of stdin (the ssh channel), if it is a token. Byte by
  byte from the raw fd: what follows is the channel watcher's."""
  line = b''
  while not line.endswith(b'\n') and len(line) < 100:
    byte = os.read(0, 1)
    if not byte:
      break
    line += byte
  token = line.decode('ascii', 'replace').strip()
  return token if TOKEN_RE.match(token) else None


def _busy_ports(ports):
  """The ports a task could not listen on (every interface, as TensorFlow
  servers do)."""
  busy = []
  for port in ports:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
      try:
        s.bind(('', port))
      except OSError:
        busy.append(port)
  return busy


def preflight(ports):
  from tf_cnn_benchmarks.measure import versions  # pylint: disable=g-import-not-at-top
  send('preflight', json.dumps({
      'harness': versions.harness_version(),
      'tensorflow': versions.tf_installed_version(),
      'python': sys.executable,
      'hostname': socket.gethostname(),
      'busy_ports': _busy_ports(ports),
  }))
  return 0


def _task_flags(flags, result_dir):
  """The task's flags, its run records going to ``result_dir``."""
  kept = [f for f in flags if not f.startswith('--result_dir=')]
  return kept + ['--result_dir=' + result_dir]


def _watch_channel(stop, acked):
  """Reads the launcher's lines on stdin (the ssh channel): `stop` stops
  the task, `ack` says the launcher has its records and exit status; end
  of file (the launcher hung up, or the connection is gone) stops it too.
  The raw fd: a thread blocked in sys.stdin would hold its lock at
  interpreter exit."""
  pending = b''
  while True:
    data = os.read(0, 4096)
    if not data:
      break
    pending += data
    *lines, pending = pending.split(b'\n')
    for line in lines:
      if line.strip() == ACK:
        acked.set()
      elif line.strip() == STOP:
        stop.set()
  stop.set()


def run_task(flags):
  token = _read_token()
  if token is None:
    print('ssh_remote task: no run token on stdin. This guard is started '
          'by `tf_cnn_benchmarks launch --hosts ...`, which sends it one; '
          'run the task itself (tf_cnn_benchmarks ...) to run it by hand.',
          file=sys.stderr)
    return 2
  result_dir = tempfile.mkdtemp(prefix=RECORDS_PREFIX)
  stop, acked = threading.Event(), threading.Event()
  keep = False
  for sig in stop_request.STOP_SIGNALS:
    signal.signal(sig, lambda *_: stop.set())
  try:
    child = subprocess.Popen(
        [sys.executable, '-m', 'tf_cnn_benchmarks.cli'] +
        _task_flags(flags, result_dir),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(process_groups.child_env(), **{TAG_ENV: tag_of(token)}),
        start_new_session=True, preexec_fn=process_groups.die_with_parent)
    # The first guard line: the launcher takes a pid from nowhere else.
    send('started', child.pid, token)
    # Where the records are kept if they cannot be handed over.
    send('records_dir', result_dir, token)

    def relay():
      # Through this process, so a marked line never lands inside one of
      # the task's lines.
      for line in child.stdout:
        _write(line)
    relay_thread = threading.Thread(target=relay, daemon=True)
    relay_thread.start()
    channel = threading.Thread(target=_watch_channel, args=(stop, acked),
                               daemon=True)
    channel.start()

    while child.poll() is None and not stop.wait(0.2):
      pass
    if child.poll() is None:
      process_groups.kill_group(child.pid, signal.SIGTERM)
      try:
        child.wait(process_groups.KILL_GRACE_SECONDS)
      except subprocess.TimeoutExpired:
        process_groups.kill_group(child.pid, signal.SIGKILL)
        child.wait()
    relay_thread.join(timeout=5)
    records = sorted(n for n in os.listdir(result_dir) if n.endswith('.json'))
    for name in records:
      with open(os.path.join(result_dir, name)) as f:
        send('record', '%s %s' % (name, json.dumps(json.load(f))), token)
    send('exit', child.returncode, token)
    # The records leave this host only once the launcher says it has them:
    # a write into a connection that is down succeeds (the kernel buffers
    # it), so a sent line is no proof of a received one.
    deadline = time.monotonic() + ACK_WAIT_SECONDS
    while (not acked.is_set() and channel.is_alive()
           and time.monotonic() < deadline):
      acked.wait(0.2)
    # Nothing to keep (a ps, a task that wrote none): no folder is left.
    keep = bool(records) and not acked.is_set()
    if keep:
      print('ssh_remote: the launcher did not confirm it received the run '
            'records; they stay in %s' % result_dir, file=sys.stderr)
  finally:
    if not keep:
      shutil.rmtree(result_dir, ignore_errors=True)
  return child.returncode if child.returncode >= 0 else 128 - child.returncode


def _tagged_members(group, tag):
  """Live processes of process group ``group`` whose environment has the
  task's tag (a zombie's environment reads empty: it is gone)."""
  found = []
  wanted = ('%s=%s' % (TAG_ENV, tag)).encode()
  for name in os.listdir('/proc'):
    if not name.isdigit():
      continue
    try:
      with open('/proc/%s/stat' % name, 'rb') as f:
        if int(f.read().rsplit(b')', 1)[1].split()[2]) != group:
          continue
      with open('/proc/%s/environ' % name, 'rb') as f:
        if wanted in f.read().split(b'\0'):
          found.append(int(name))
    except (OSError, ValueError, IndexError):
      continue
  return found


def reap(pid, tag):
  """SIGKILLs the task's processes: group ``pid``, tagged ``tag``. Never a
  process the guard did not start: the pid came over the network (and a
  pid is reused once its process is gone)."""
  deadline = time.monotonic() + process_groups.KILL_GRACE_SECONDS
  while True:
    members = _tagged_members(pid, tag)
    if not members:
      print('gone')
      return 0
    if time.monotonic() > deadline:
      print('alive')
      return 1
    for member in members:
      try:
        os.kill(member, signal.SIGKILL)
      except ProcessLookupError:
        pass
    time.sleep(0.1)


def main(argv):
  parser = argparse.ArgumentParser(prog='ssh_remote')
  sub = parser.add_subparsers(dest='command', required=True)
  check = sub.add_parser('preflight')
  check.add_argument('--ports', default='')
  sub.add_parser('task')
  reaping = sub.add_parser('reap')
  reaping.add_argument('pid', type=int)
  reaping.add_argument('tag')
  own, flags = argv, []
  if '--' in argv:
    cut = argv.index('--')
    own, flags = argv[:cut], argv[cut + 1:]
  args = parser.parse_args(own)
  if args.command == 'preflight':
    return preflight([int(p) for p in args.ports.split(',') if p])
  if args.command == 'reap':
    return reap(args.pid, args.tag)
  return run_task(flags)


if __name__ == '__main__':
  code = main(sys.argv[1:])
  sys.stdout.flush()
  # Past the channel watcher, still blocked reading stdin.
  os._exit(code)
