"""The step's deadline alone ends a collective step whose peer never comes.

collective_all_reduce's training all-reduces carry no timeout of their own
(a timeout costs a sleeping thread per run: variable_update/
collective_all_reduce.py): their bound is the step's RunOptions deadline
(deadlines.bounded), which cancels the step, and the cancelled collective
aborts. This pins that TensorFlow behaviour on the session kind the
cluster uses (a gRPC session on the task's own server): without it a
stuck step would outlive its deadline, waiting until the watchdog ends the
task, or forever with --stall_shutdown_timeout=0 elsewhere.
"""

import subprocess
import sys

import pytest

from tests.cluster import helpers
from tests.driver_helpers import REPO

pytestmark = pytest.mark.cluster

_DEADLINE_SECONDS = 2

# Two workers' servers in one process: both run step 1 (the group and the
# instance resolved, as after the start's broadcast), then worker0 runs
# step 2 alone, with the step's deadline.
_SCRIPT = '''
import os, sys, threading, time
import tensorflow as tf
from tensorflow.python.ops import collective_ops
from tf_cnn_benchmarks.cluster import deadlines
tf1 = tf.compat.v1
tf1.disable_eager_execution()
spec = tf.train.ClusterSpec({'worker': sys.argv[1].split(',')})
sessions, reduced = [], []
for i in range(2):
  config = tf1.ConfigProto()
  config.experimental.collective_group_leader = '/job:worker/replica:0/task:0'
  config.device_filters.append('/job:worker/task:%d' % i)
  server = tf.distribute.Server(spec, 'worker', i, config=config)
  graph = tf.Graph()
  with graph.as_default(), tf1.device('/job:worker/task:%d/device:CPU:0' % i):
    # As collective_all_reduce.apply_gradients builds it: no own timeout.
    reduced.append(collective_ops.all_reduce(
        tf.constant([1.0, 3.0]), 2, 1, 100, 'Add', 'Div', timeout=0))
  sessions.append(tf1.Session(server.target, graph=graph, config=config))
options = deadlines.bounded(float(sys.argv[2]) * 1000)
both = [threading.Thread(target=sessions[i].run, args=(reduced[i],),
                         kwargs=dict(options=options)) for i in range(2)]
for t in both:
  t.start()
for t in both:
  t.join()
started = time.monotonic()
try:
  sessions[0].run(reduced[0], options=options)
  print('RESULT returned')
except tf.errors.OpError as e:
  print('RESULT %s %.2f' % (type(e).__name__, time.monotonic() - started))
sys.stdout.flush()
os._exit(0)  # Servers cannot be stopped; a session close may block.
'''


@pytest.mark.timeout(90)
def test_a_collective_step_without_its_own_timeout_ends_by_the_deadline():
  addresses = ','.join('127.0.0.1:%d' % helpers.free_port() for _ in range(2))
  run = subprocess.run(
      [sys.executable, '-c', _SCRIPT, addresses, str(_DEADLINE_SECONDS)],
      cwd=REPO, env=helpers.child_env({'TF_CPP_MIN_LOG_LEVEL': '2'}),
      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, timeout=60, check=False)
  output = run.stdout.decode(errors='replace')
  results = [l.split()[1:] for l in output.splitlines()
             if l.startswith('RESULT ')]
  assert results, output
  (kind, *took), = results
  assert kind == 'DeadlineExceededError', output
  # Not before the deadline; after it, only the cancellation (a loaded
  # machine may take seconds to get there).
  assert _DEADLINE_SECONDS - 0.1 <= float(took[0]) < _DEADLINE_SECONDS + 10, (
      output)
