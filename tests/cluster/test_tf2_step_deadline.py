"""The tf2 cluster step's deadline (cluster/task/tf2_step_deadline.py).

MultiWorkerMirroredStrategy's collectives carry no timeout of their own (a
timeout costs a sleeping thread per run: test_long_runs.py); a step past
its deadline has its collectives aborted by one thread per task instead.
The class on its own (no TensorFlow), then that TensorFlow behaviour on a
real 2-worker strategy: the abort alone ends a step whose peer, alive and
heartbeating, never comes.
"""

import re
import threading
import time

import pytest

from tests.cluster import helpers
from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.task import tf2_step_deadline
from tf_cnn_benchmarks.config import flags


class _Aborts:
  """An abort(message) that releases the step it aborts, as TensorFlow's
  does: the blocked collective fails."""

  def __init__(self):
    self.messages = []
    self.done = threading.Event()

  def __call__(self, message):
    self.messages.append(message)
    self.done.set()


def test_steps_within_the_deadline_are_never_aborted_and_share_one_thread():
  aborts = _Aborts()
  deadline = tf2_step_deadline.StepDeadline(0.3, aborts)
  threads = threading.active_count()
  for step in range(1, 201):
    assert deadline.run(step, lambda s=step: s) == step
  # One thread for the whole run, not one per step.
  assert threading.active_count() == threads + 1
  # Time between steps is not a step's: nothing runs, nothing to abort.
  time.sleep(0.6)
  assert deadline.run(201, lambda: time.sleep(0.1) or 'ok') == 'ok'
  assert aborts.messages == [] and deadline.aborted is None


def test_a_step_past_the_deadline_is_aborted_once_naming_it():
  aborts = _Aborts()
  deadline = tf2_step_deadline.StepDeadline(0.5, aborts)
  deadline.run(1, lambda: None)
  started = time.monotonic()
  # The step blocks until aborted, as a collective whose peer never comes.
  assert deadline.run(2, lambda: aborts.done.wait(10)) is True
  took = time.monotonic() - started
  assert 0.5 <= took < 3, took
  assert len(aborts.messages) == 1, aborts.messages
  assert aborts.messages[0].startswith(
      'step 2 ran past its deadline of 0.5 s'), aborts.messages
  assert deadline.aborted == aborts.messages[0]
  time.sleep(0.7)
  assert len(aborts.messages) == 1  # the abort lasts: once is enough


def _runtime(*args):
  """A tf2 cluster task's runtime as the flags make it (not begun)."""
  from tf_cnn_benchmarks.cluster.task import tf2_runtime  # pylint: disable=g-import-not-at-top
  params = flags.parse_command_line(
      ['tf_cnn_benchmarks', '--engine=tf2', '--worker_hosts=a:1,b:2'] +
      list(args))[0]
  return tf2_runtime.Tf2ClusterRuntime(roles.resolve_role(params), params)


def test_a_multi_worker_task_runs_its_steps_within_the_step_deadline():
  """MultiWorkerMirroredStrategy: the step deadline is the role's, and
  run_function_step runs the step's call within it."""
  runtime = _runtime('--variable_update=collective_all_reduce',
                     '--job_name=worker', '--task_index=1',
                     '--stall_timeout=4', '--stall_shutdown_timeout=3')
  assert runtime._step_deadline.seconds == deadlines.step_deadline_seconds(
      runtime.params) == runtime.role.step_deadline_seconds
  # The step as the runtime runs it, without the board and the watchdog's
  # checks around it, and a deadline short enough to wait for.
  aborts = _Aborts()
  runtime._step_deadline = tf2_step_deadline.StepDeadline(0.3, aborts)
  runtime._training = True
  runtime._steps_run = 7
  runtime._counted_step = lambda sess, run: run(None)
  assert runtime.run_function_step(lambda: aborts.done.wait(10)) is True
  assert aborts.messages[0].startswith('step 7 ran past its deadline')


@pytest.mark.parametrize('args', [
    # No stall bound: no step deadline either (deadlines.py).
    ('--variable_update=collective_all_reduce', '--job_name=worker',
     '--task_index=0', '--stall_timeout=0'),
    # ParameterServerStrategy's coordinator: its steps run no collectives.
    ('--variable_update=parameter_server', '--cross_replica_sync=False',
     '--job_name=controller', '--ps_hosts=c:3', '--controller_host=d:4'),
])
def test_no_step_deadline_without_a_stall_bound_or_collectives(args):
  assert _runtime(*args)._step_deadline is None


# One worker of a 2-worker MultiWorkerMirroredStrategy, configured as
# tf2_runtime configures it (its coordination service, no collective
# timeout). Both run step 1 (the collectives' group and instance resolved);
# then worker1 stays alive (its heartbeats go on) and never runs step 2,
# which worker0 runs under the step's deadline.
_WORKER = r'''
import os, sys, time
import tensorflow as tf
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.task import tf2_runtime, tf2_step_deadline
hosts, index, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
role = roles.resolve_role(flags.parse_command_line([
    'x', '--engine=tf2', '--variable_update=collective_all_reduce',
    '--job_name=worker', '--task_index=%d' % index,
    '--worker_hosts=' + hosts])[0])
tf2_runtime.configure_coordination_service(role, 60)
strategy = tf.distribute.MultiWorkerMirroredStrategy(
    cluster_resolver=tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(role.tf_cluster_def()), task_type='worker',
        task_id=index, rpc_layer='grpc'),
    communication_options=tf.distribute.experimental.CommunicationOptions())
with strategy.scope():
  v = tf.Variable([1.0, 3.0])

@tf.function
def step():
  return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce(
      tf.distribute.ReduceOp.SUM, v.read_value()))

step()
print('STEP1', flush=True)
if index == 1:
  time.sleep(120)
  os._exit(0)
deadline = tf2_step_deadline.StepDeadline(seconds,
                                          tf2_runtime._abort_collectives)
started = time.monotonic()
try:
  deadline.run(2, step)
  print('RESULT returned')
except tf.errors.OpError as e:
  print('RESULT %s %.2f %s' % (type(e).__name__, time.monotonic() - started,
                               ' '.join(str(e).split())))
sys.stdout.flush()
os._exit(0)
'''

_DEADLINE_SECONDS = 2


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_the_abort_alone_ends_a_strategy_step_whose_peer_never_comes(
    tmp_path):
  """worker0's step 2 fails with DeadlineExceeded, saying why, just past
  the deadline: long before the coordination service could notice
  anything (worker1 still sends heartbeats), so nothing else ended it."""
  hosts = ','.join('127.0.0.1:%d' % helpers.free_port() for _ in range(2))
  logs = [str(tmp_path / ('worker%d.log' % i)) for i in range(2)]
  workers = [helpers.start(['-c', _WORKER, hosts, str(i),
                            str(_DEADLINE_SECONDS)], log_path=logs[i])
             for i in range(2)]
  try:
    workers[0].wait(timeout=90)
  finally:
    helpers.kill(workers)
  output = helpers.read(logs[0])
  assert 'STEP1' in helpers.read(logs[1]), helpers.read(logs[1])
  results = [l.split(None, 3)[1:] for l in output.splitlines()
             if l.startswith('RESULT ')]
  assert results, output
  (kind, took, message), = results
  assert kind == 'DeadlineExceededError', output
  assert re.search(r'step 2 ran past its deadline of %d s' %
                   _DEADLINE_SECONDS, message), output
  # Not before the deadline; after it, the abort on a loaded machine, well
  # within the coordination service's heartbeat timeout (10 s).
  assert _DEADLINE_SECONDS - 0.1 <= float(took) < _DEADLINE_SECONDS + 6, (
      output)
