"""Shared helpers for tests that run the benchmark in-process or as a CLI."""

import io
import json
import os
import subprocess
import sys
import threading
import time

from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.engine_graph import engine
from tf_cnn_benchmarks.engine_graph import model_graph
from tf_cnn_benchmarks.run import report
from tf_cnn_benchmarks.config import run_config
from tests.niced_timeouts import wall_bound

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, 'tf_cnn_benchmarks.py')


def build_graph(**overrides):
  """(params, run config, model_graph.BuiltGraph) of a one-step CPU run."""
  settings = dict(device='cpu', num_batches=1, num_warmup_batches=0,
                  result_dir='')
  settings.update(overrides)
  params = flags.make_params(**settings)
  rc = run_config.resolve(params)
  rc, source = driver.open_input_source(params, rc)
  return params, rc, model_graph.build(rc, source)


def run_quietly(**overrides):
  """A graph-engine run with defaults for a fast CPU test; returns
  (result, text)."""
  settings = dict(device='cpu', num_batches=3, num_warmup_batches=1,
                  result_dir='', display_every=1,
                  # Its stall watchdog ends this pytest process (os._exit)
                  # when it trips: a hang guard, raised where the suite's
                  # niced phase raises them (tests/niced_timeouts.py).
                  stall_timeout=wall_bound(
                      flags.default_values()['stall_timeout']))
  settings.update(overrides)
  out = io.StringIO()
  result = engine.run(flags.make_params(**settings),
                      reporter=report.Reporter(out))
  return result, out.getvalue()


def run_cli(*args, timeout=300, env=None, **popen_kw):
  # The harness quiets TensorFlow itself (--verbosity); don't help it.
  env = dict(os.environ if env is None else env)
  env.pop('TF_CPP_MIN_LOG_LEVEL', None)
  return subprocess.run([sys.executable, SCRIPT] + list(args), cwd=REPO,
                        capture_output=True, text=True, timeout=timeout,
                        env=env, **popen_kw)


class LiveRun:
  """The CLI run as a process the test watches line by line (and signals):
  ``flags`` besides --device=cpu and --result_dir=``runs``."""

  def __init__(self, runs, *flags):
    self.runs = runs
    self.lines = []
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    env.pop('TF_CPP_MIN_LOG_LEVEL', None)
    self.proc = subprocess.Popen(
        [sys.executable, SCRIPT, '--device=cpu', '--result_dir=%s' % runs] +
        list(flags), cwd=REPO, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, env=env)
    self._reader = threading.Thread(target=self._read, daemon=True)
    self._reader.start()

  def _read(self):
    for line in self.proc.stdout:
      self.lines.append(line.rstrip('\n'))

  def wait_for_line(self, predicate, timeout=400):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
      for line in list(self.lines):
        if predicate(line):
          return line
      assert self.proc.poll() is None, self.output()
      time.sleep(0.05)
    raise AssertionError('no such line in time:\n' + self.output())

  def ended(self, timeout):
    try:
      return self.proc.wait(timeout=timeout)
    finally:
      self._reader.join(5)

  def output(self):
    return '\n'.join(self.lines)

  def record(self):
    (name,) = [n for n in os.listdir(self.runs) if n.endswith('.json')]
    return json.loads((self.runs / name).read_text())

  def close(self):
    if self.proc.poll() is None:
      self.proc.kill()
    self.proc.wait()
