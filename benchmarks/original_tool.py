"""Runs the original tf_cnn_benchmarks (tensorflow/benchmarks) from a checkout
the user already has, for side-by-side runs (benchmarks/vs_original.py).

Nothing of the original is copied into this repository: it runs as it is,
from DIR/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py, under an
interpreter of its own. Its models use ``tf.layers``, which TensorFlow >=
2.16 keeps only in the tf-keras package, reached with TF_USE_LEGACY_KERAS=1;
tf-keras goes in a separate venv (``--no-deps``, so it cannot replace the
TensorFlow it sits beside) and never into ours.

The original has no launcher, so a cluster is started here the way its
README does by hand: one process per ps and worker task on free loopback
ports, each with --job_name/--task_index/--ps_hosts/--worker_hosts. Its ps
tasks serve forever (``server.join()``), so they are stopped once every
worker has finished.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

from subprocess_runs import RunFailed

from tf_cnn_benchmarks.cluster.launch import launcher  # free_ports only (no TF)

SCRIPT_IN_CHECKOUT = os.path.join('scripts', 'tf_cnn_benchmarks',
                                  'tf_cnn_benchmarks.py')
DIR_ENV = 'TF_CNN_BENCHMARKS_ORIGINAL_DIR'
PYTHON_ENV = 'TF_CNN_BENCHMARKS_ORIGINAL_PYTHON'
# Where PERFORMANCE.md's set-up puts the original's interpreter.
DEFAULT_PYTHON = '/tmp/orig-venv/bin/python'
SETUP = ('python3 -m venv /tmp/orig-venv && '
         '/tmp/orig-venv/bin/pip install tensorflow-cpu==2.21.0 && '
         '/tmp/orig-venv/bin/pip install --no-deps "tf-keras==2.21.*"')
LOOPBACK = '127.0.0.1'
# How long a stopped ps task gets to exit before it is killed.
_STOP_GRACE_SEC = 10


def default_dir():
  return os.environ.get(DIR_ENV) or None


def default_python():
  return os.environ.get(PYTHON_ENV) or DEFAULT_PYTHON


def script_path(checkout):
  return os.path.join(checkout, SCRIPT_IN_CHECKOUT)


def environment():
  """What the original's processes get on top of ours: tf-keras as Keras,
  and the user's own PYTHONPATH (not the one pointing into this repo, whose
  top-level packages share names with the original's modules)."""
  return {'TF_USE_LEGACY_KERAS': '1', 'TF_CPP_MIN_LOG_LEVEL': '2',
          'PYTHONPATH': os.environ.get('PYTHONPATH', '')}


def problem(checkout, python):
  """Why the original cannot run from ``checkout`` with ``python`` (a
  paragraph), or None. Imports TensorFlow once in ``python`` (seconds)."""
  if not checkout:
    return ('No checkout of the original tool was given. Clone '
            'https://github.com/tensorflow/benchmarks somewhere and pass '
            '--original_dir=THAT_DIR (or set %s).' % DIR_ENV)
  if not os.path.isfile(script_path(checkout)):
    return ('%s is not a checkout of tensorflow/benchmarks: there is no %s '
            'in it. Pass the directory of the clone itself (the one holding '
            'scripts/).' % (checkout, SCRIPT_IN_CHECKOUT))
  python = shutil.which(python) or python
  if not os.access(python, os.X_OK):
    return ('The interpreter for the original, %s, does not exist. Create it '
            'with: %s (or pass --original_python=PYTHON, or set %s).' % (
                python, SETUP, PYTHON_ENV))
  env = dict(os.environ, **environment())
  try:
    out = subprocess.run(
        [python, '-c', 'import tensorflow, tf_keras'], capture_output=True,
        text=True, env=env, timeout=300)
  except (OSError, subprocess.TimeoutExpired) as e:
    return 'The interpreter %s could not be started: %s.' % (python, e)
  if out.returncode != 0:
    last = (out.stderr.strip().splitlines() or ['(no output)'])[-1]
    return ('The interpreter %s cannot import tensorflow and tf_keras (%s), '
            'which the original needs. Install them into it: %s.' % (
                python, last, SETUP))
  return None


def cluster_addresses(num_ps, num_workers, host=LOOPBACK):
  """(ps_hosts, worker_hosts): 'host:port' lists on free ports."""
  ports = launcher.free_ports(host, num_ps + num_workers)
  address = ['%s:%d' % (host, p) for p in ports]
  return address[:num_ps], address[num_ps:]


def task_argvs(python, script, flags, ps_hosts, worker_hosts):
  """[(label, argv)] of every task: the same flags plus its cluster flags,
  as the original's README starts them by hand."""
  cluster = ['--ps_hosts=' + ','.join(ps_hosts),
             '--worker_hosts=' + ','.join(worker_hosts)]
  tasks = []
  for job, count in (('ps', len(ps_hosts)), ('worker', len(worker_hosts))):
    for index in range(count):
      tasks.append(('%s%d' % (job, index), [python, script] + list(flags) +
                    cluster + ['--job_name=' + job,
                               '--task_index=%d' % index]))
  return tasks


def prefixed(label, text):
  """Every line behind '[label] ', as our launcher relays a task's output."""
  return ''.join('[%s] %s\n' % (label, line) for line in text.splitlines())


def _tail(text, lines=25):
  return '\n'.join(text.rstrip().splitlines()[-lines:])


class Original:
  """The original tool from ``checkout`` under ``python``; runs go through
  ``runner`` (a subprocess_runs.Runner) so they wait for a quiet machine
  and report other processes' CPU share, as ours do."""

  def __init__(self, checkout, python, runner, timeout=1800):
    self.script = script_path(checkout)
    self.python = python
    self.runner = runner
    self.timeout = timeout

  def run(self, flags):
    """One process: (stdout, others' CPU share); RunFailed if it fails."""
    return self.runner.run([self.python, self.script] + list(flags),
                           environment())

  def run_cluster(self, flags, num_ps, num_workers, task_flags=None):
    """A loopback cluster: (every worker's output behind '[workerN] ',
    others' CPU share); RunFailed naming the task that failed.
    ``task_flags``: {label: flags only that task gets} (e.g. the chief's
    profile files, which every task would otherwise write to one path)."""
    ps_hosts, worker_hosts = cluster_addresses(num_ps, num_workers)
    tasks = [(label, argv + list((task_flags or {}).get(label, ())))
             for label, argv in task_argvs(self.python, self.script, flags,
                                           ps_hosts, worker_hosts)]
    with tempfile.TemporaryDirectory(prefix='original_cluster_') as logs:
      outputs, share = self.runner.measured(
          lambda: self._run_tasks(tasks, logs))
    return ''.join(prefixed(label, outputs[label]) for label, _ in tasks
                   if label.startswith('worker')), share

  def _run_tasks(self, tasks, logs):
    env = dict(os.environ, **environment())
    procs = {}
    try:
      for label, argv in tasks:
        with open(os.path.join(logs, label + '.log'), 'wb') as out:
          # A session of its own, so stopping it stops all it started.
          procs[label] = subprocess.Popen(
              argv, stdout=out, stderr=subprocess.STDOUT,
              stdin=subprocess.DEVNULL, env=env, cwd=logs,
              start_new_session=True)
      failure = self._wait_for_workers(procs)
    finally:
      _stop(procs.values())
    outputs = {}
    for label, _ in tasks:
      with open(os.path.join(logs, label + '.log'), errors='replace') as f:
        outputs[label] = f.read()
    if failure:
      label, why = failure
      raise RunFailed('original cluster task %s %s\n%s\n%s' % (
          label, why, ' '.join(dict(tasks)[label]), _tail(outputs[label])))
    return outputs

  def _wait_for_workers(self, procs):
    """None once every worker exited 0; else (task, what went wrong)."""
    deadline = time.monotonic() + self.timeout
    while True:
      workers_left = False
      for label, proc in procs.items():
        code = proc.poll()
        if code is None:
          workers_left = workers_left or label.startswith('worker')
        elif label.startswith('ps'):
          # A ps task serves until stopped: ending early is a failure.
          return label, ('exited with code %d before the workers finished'
                         % code)
        elif code != 0:
          return label, 'exited with code %d' % code
      if not workers_left:
        return None
      if time.monotonic() > deadline:
        running = [l for l, p in procs.items()
                   if p.poll() is None and l.startswith('worker')]
        return running[0], ('was still running after %.0f s (the time '
                            'limit; still running: %s)' % (
                                self.timeout, ', '.join(running)))
      time.sleep(0.5)


def _stop(procs):
  """SIGTERM to each process group still running, SIGKILL after a grace;
  waits for all (so their CPU time counts as ours in the meter)."""
  for proc in procs:
    if proc.poll() is None:
      _signal_group(proc, signal.SIGTERM)
  deadline = time.monotonic() + _STOP_GRACE_SEC
  for proc in procs:
    try:
      proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
      _signal_group(proc, signal.SIGKILL)
      proc.wait()


def _signal_group(proc, sig):
  try:
    os.killpg(proc.pid, sig)
  except ProcessLookupError:
    pass
