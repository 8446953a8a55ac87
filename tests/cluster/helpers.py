"""Shared pieces of the cluster tests: tiny runs, processes, records.

Every cluster here is a real multi-process TensorFlow cluster on loopback
(or on a veth pair between network namespaces), kept tiny: the trivial
model at 32x32, batch 2, a few steps. Every process a test starts is killed
in a finally, whatever happened.
"""

import ctypes
import dataclasses
import glob
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from tests.driver_helpers import REPO, SCRIPT, run_quietly
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.task import step_repeats

NUM_BATCHES = 4
FAULT_ENV = 'TF_CNN_BENCHMARKS_TEST_FAULT'
# tiny_flags' and local_losses' learning rate (see tiny_flags).
LEARNING_RATE = 1e-5


def tiny_flags(result_dir, **overrides):
  """Benchmark flags of a tiny, deterministic training run.

  The learning rate is small because synthetic images are pixel-valued and
  the trivial model diverges on them at its default rate. At 1e-5 the loss
  (~2.26) still moves by ~2e-3 a step, a hundred times the 1e-5 relative
  tolerance the mode tests compare at, so an update that is missing, not
  averaged or applied twice is far outside it (at 1e-9 the loss moved by
  2e-7: those tests saw the forward pass only). It also stays finite over
  the fault tests' long runs (1500 steps: 2.26 -> 0.64).
  An override of None leaves the flag out (its default).
  """
  settings = dict(
      model='trivial', data_name='cifar10', device='cpu', batch_size=2,
      num_batches=NUM_BATCHES, num_warmup_batches=1, display_every=1,
      optimizer='momentum', init_learning_rate=LEARNING_RATE,
      result_dir=result_dir,
      startup_timeout=60, stall_timeout=60)
  settings.update(overrides)
  return ['--%s=%s' % kv for kv in settings.items() if kv[1] is not None]


def child_env(extra=None):
  env = dict(os.environ)
  env.pop('TF_CPP_MIN_LOG_LEVEL', None)  # the harness quiets TF itself
  env.pop(FAULT_ENV, None)  # only a test that means it injects a fault
  env['PYTHONUNBUFFERED'] = '1'
  env.update(extra or {})
  return env


def start(argv, prefix=(), log_path=None, env=None):
  """Starts a process in its own process group, output to a file.

  ``env``: extra environment variables (e.g. a test fault).
  """
  out = open(log_path, 'wb') if log_path else subprocess.DEVNULL
  try:
    return subprocess.Popen(
        list(prefix) + [sys.executable] + list(argv), cwd=REPO,
        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env=child_env(env), start_new_session=True)
  finally:
    if log_path:
      out.close()


def kill(processes):
  """SIGKILLs every process (group) still running and reaps it."""
  for p in processes:
    if p.poll() is None:
      try:
        os.killpg(p.pid, signal.SIGKILL)
      except ProcessLookupError:
        pass
    p.wait()


def launch(launcher_args, benchmark_flags, timeout=150, env=None):
  """Runs `tf_cnn_benchmarks launch`; returns (returncode, output).
  ``env``: extra environment variables (e.g. a test fault)."""
  process = subprocess.Popen(
      [sys.executable, SCRIPT, 'launch'] + list(launcher_args) + ['--'] +
      list(benchmark_flags), cwd=REPO, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=child_env(env),
      start_new_session=True)
  try:
    out, _ = process.communicate(timeout=timeout)
    return process.returncode, out.decode(errors='replace')
  finally:
    kill([process])


def task_lines(output, label):
  """Lines task ``label`` printed, without the launcher's prefix."""
  prefix = '[%s] ' % label
  return [l[len(prefix):] for l in output.splitlines()
          if l.startswith(prefix)]


def records(result_dir):
  """{'worker0': record, ...} of every run record in result_dir."""
  found = {}
  for path in glob.glob(os.path.join(result_dir, '*.json')):
    with open(path) as f:
      rec = json.load(f)
    if 'config' not in rec:
      continue  # Not a run record: a --trace_file written beside them.
    config = rec['config']
    found['%s%d' % (config['job_name'], config['task_index'])] = rec
  return found


def ended_by_a_refused_copy(recs):
  """Whether a cluster run (its records(), as above) failed only because
  TensorFlow refused a synchronous step as a copy: every failed task names
  the refused copy (cluster/task/step_repeats.py), which a step in lockstep
  cannot get past. On loopback that is TensorFlow repeating its own random
  request id, odds of about n^2/2^33 over n steps (CI met one
  at a3cc3ec: worker1 of a 1800-step distributed_replicated cluster, after
  step 1300). A test that is not about it may run such a cluster again,
  once, and says so."""
  failures = [r['failure'] for r in recs.values() if r.get('failure')]
  return bool(failures) and all(
      f['type'] == 'AbortedError' and
      step_repeats.REFUSED_COPY_WORDS in f['message'] for f in failures)


def step_losses(rec):
  return rec['timing']['step_losses']


def chief_global_steps(lines):
  """Global-step increments the chief saw over its timed loop."""
  for line in lines:
    m = re.match(r'^cluster images/sec: [0-9.]+ \(from the global step: '
                 r'(\d+) steps', line)
    if m:
      return int(m.group(1))
  return None


def free_port(host='127.0.0.1'):
  with socket.socket() as s:
    s.bind((host, 0))
    return s.getsockname()[1]


def pid_alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  # A zombie is dead for our purposes.
  try:
    with open('/proc/%d/stat' % pid) as f:
      return f.read().split(')')[-1].split()[0] != 'Z'
  except OSError:
    return False


def wait_for(predicate, timeout, what):
  deadline = time.monotonic() + timeout
  while not predicate():
    if time.monotonic() > deadline:
      raise AssertionError('timed out after %.0f s waiting for %s' % (
          timeout, what))
    time.sleep(0.2)


PY_SPY = os.path.join(os.path.dirname(sys.executable), 'py-spy')


def stacks_of(pid, main_only=False):
  """Every thread's stack in process ``pid`` (py-spy dump), or only its
  main thread's (``main_only``: short enough for a failure's cause),
  or why not."""
  try:
    done = subprocess.run([PY_SPY, 'dump', '--pid', str(pid)],
                          capture_output=True, text=True, timeout=30)
  except (OSError, subprocess.TimeoutExpired) as e:
    return 'no stacks of pid %d: %s' % (pid, e)
  text = done.stdout
  if main_only:
    match = re.search(r'^Thread .*"MainThread"\n(?:    .*\n?)*', text, re.M)
    text = match.group(0) if match else text
  return 'stacks of pid %d:\n%s%s' % (pid, text, done.stderr)


def local_losses(**overrides):
  """Step losses of the same tiny run in one process (the reference)."""
  settings = dict(model='trivial', data_name='cifar10', batch_size=2,
                  num_batches=NUM_BATCHES, num_warmup_batches=1,
                  optimizer='momentum', init_learning_rate=LEARNING_RATE,
                  variable_update='replicated')
  settings.update(overrides)
  result, text = run_quietly(**settings)
  assert result.exit_code == 0, text
  return result.times.losses


def read(path):
  with open(path) as f:
    return f.read()


def end_first(output, lines=40):
  """A failed assertion's message about a cluster's output, its end first.

  CI's log keeps a long failure's first lines only, and a cluster's output
  says why it ended in its last ones (the task that failed, the launcher's
  cluster summary): a CI run lost exactly that (stop 47's straggler test).
  """
  tail = output.rstrip('\n').splitlines()[-lines:]
  return 'its last %d lines:\n%s\n\nthe whole output:\n%s' % (
      len(tail), '\n'.join(tail), output)


def run_by_hand(tmp_path, common, tasks, timeout):
  """Starts each of ``tasks`` ([(label, its own flags)]) with the flags
  ``common`` to all, waits up to ``timeout`` s for each; returns
  ({label: exit code}, {label: output}). Every process is killed."""
  logs, procs, codes = {}, [], {}
  try:
    for label, own in tasks:
      logs[label] = str(tmp_path / (label + '.log'))
      procs.append(start([SCRIPT] + list(common) + list(own),
                         log_path=logs[label]))
    for (label, _), proc in zip(tasks, procs):
      codes[label] = proc.wait(timeout=timeout)
  finally:
    kill(procs)
  return codes, {label: read(path) for label, path in logs.items()}


def launch_in_background(tmp_path, workers=2, ps=1, env=None, **overrides):
  """Starts `launch` on a long tiny run; returns (process, log path)."""
  log = str(tmp_path / 'launch.log')
  settings = dict(variable_update='parameter_server', num_batches=100000,
                  display_every=50)
  settings.update(overrides)
  flags = tiny_flags(str(tmp_path), **settings)
  process = start([SCRIPT, 'launch', '--ps', str(ps), '--workers',
                   str(workers), '--'] + flags, log_path=log, env=env)
  return process, log


def launch_and_wait(tmp_path, timeout, **launch_overrides):
  """Runs `launch` (launch_in_background's arguments) to its end; returns
  (exit code, output). The launcher is always killed."""
  process, log = launch_in_background(tmp_path, **launch_overrides)
  try:
    code = process.wait(timeout=timeout)
  finally:
    kill([process])
  return code, read(log)


@dataclasses.dataclass
class FaultedRun:
  code: int
  output: str
  pids: dict         # task label -> pid
  took: float        # seconds from the fault to the launcher's exit
  fault_time: float  # time.time() of the fault (to compare with file mtimes)


def run_with_fault(tmp_path, ready, fault, timeout, **launch_overrides):
  """Launches in the background, waits for ``ready(process, log)`` (which
  returns the task pids), does ``fault(process, pids)`` and waits up to
  ``timeout`` s for the launcher to end. The launcher is always killed."""
  process, log = launch_in_background(tmp_path, **launch_overrides)
  try:
    pids = ready(process, log)
    fault_time, fault_at = time.time(), time.monotonic()
    fault(process, pids)
    code = process.wait(timeout=timeout)
    took = time.monotonic() - fault_at
  finally:
    kill([process])
  return FaultedRun(code, read(log), pids, took, fault_time)


def task_pids(output):
  """{'worker1': pid, ...} from the launcher's "started" line."""
  m = re.search(r'\[launch\] started (.*)', output)
  return {label: int(pid) for label, pid in re.findall(
      r'(\w+) \(pid (\d+)\)', m.group(1))} if m else {}


def wait_until_step(process, log, label='worker1', step=50, timeout=90):
  """Waits until task ``label`` reported timed step ``step``; its pids."""
  def reached():
    assert process.poll() is None, read(log)
    return re.search(r'\[%s\] %d\t' % (label, step), read(log)) is not None
  wait_for(reached, timeout, '%s to reach step %d' % (label, step))
  return task_pids(read(log))


def assert_no_orphans(pids):
  """Every task process is gone (a zombie counts as gone)."""
  survivors = {label: pid for label, pid in pids.items() if pid_alive(pid)}
  for pid in survivors.values():
    os.kill(pid, signal.SIGKILL)
  assert not survivors, 'survived: %s' % survivors


def assert_ended_by_themselves(output):
  """No task was stopped by the launcher: each ended by itself, so its exit
  code and record are its own (a SIGTERM from the launcher would make them
  "interrupted", whatever the task had noticed)."""
  assert 'stopping the cluster' not in output, output
  assert 'stopped by the launcher' not in output, output


def assert_checkpoint_restores(train_dir):
  """The latest checkpoint in train_dir restores (an eval run reads it, as
  a user would); returns its global step."""
  result, text = run_quietly(
      model='trivial', data_name='cifar10', batch_size=2, eval=True,
      variable_update='parameter_server', train_dir=train_dir,
      num_batches=1, num_warmup_batches=0)
  assert result.exit_code == 0, text
  m = re.search(r'Restored checkpoint (\S+) \(global step (\d+)\)', text)
  assert m, text
  return int(m.group(2))


class CheckpointSaves:
  """Every checkpoint save into a train_dir, timed as it happens.

  A save ends by replacing the train_dir's `checkpoint` index (a rename
  onto it, written last), so each save is one inotify event, including a
  save that rewrites files of the same step: file counts and mtimes miss
  such a save loop, and a step count misses one while the global step
  stands still. Use as a context manager around the run; ``times`` are
  time.time() of each save.
  """

  _IN_CLOSE_WRITE, _IN_MOVED_TO = 0x8, 0x80
  _IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
  _EVENT = struct.Struct('iIII')  # wd, mask, cookie, len; then the name

  def __init__(self, train_dir):
    os.makedirs(train_dir, exist_ok=True)
    self.times = []
    self._libc = ctypes.CDLL(None, use_errno=True)
    self._fd = self._libc.inotify_init1(self._IN_NONBLOCK | self._IN_CLOEXEC)
    if self._fd < 0 or self._libc.inotify_add_watch(
        self._fd, os.fsencode(train_dir),
        self._IN_CLOSE_WRITE | self._IN_MOVED_TO) < 0:
      raise OSError(ctypes.get_errno(), 'inotify on %s' % train_dir)
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._watch, daemon=True)

  def __enter__(self):
    self._thread.start()
    return self

  def __exit__(self, *exc):
    self._stop.set()
    self._thread.join()
    os.close(self._fd)

  def _watch(self):
    while not self._stop.is_set():
      if not select.select([self._fd], [], [], 0.1)[0]:
        continue
      data, now = os.read(self._fd, 1 << 16), time.time()
      offset = 0
      while offset < len(data):
        _, _, _, length = self._EVENT.unpack_from(data, offset)
        offset += self._EVENT.size
        name = data[offset:offset + length].rstrip(b'\0')
        offset += length
        if name == b'checkpoint':
          self.times.append(now)

  def after(self, when):
    """How many saves ended after time.time() ``when``."""
    return len([t for t in self.times if t > when])


def cluster_role(job='worker', index=0, mode='parameter_server', sync=True):
  """A ClusterRole of 1 ps and 2 workers at unreachable addresses, for
  tests of the parts that only read a role."""
  return roles.ClusterRole(
      jobs={'ps': ('127.0.0.1:1',), 'worker': ('127.0.0.1:2', '127.0.0.1:3'),
            'controller': ()},
      job_name=job, task_index=index, protocol='grpc', variable_update=mode,
      cross_replica_sync=sync)
