"""The tf2 cluster's progress board in the coordination service's store."""

import json
import subprocess
import sys

import pytest

from tests.cluster import helpers

pytestmark = pytest.mark.cluster

# A one-worker MultiWorkerMirroredStrategy cluster in a fresh process (the
# coordination service is configured before TensorFlow's runtime starts),
# its board driven as the runtime drives it for 3 steps, every call to the
# store counted and what the store holds read back at each point.
_BOARD_SCRIPT = r'''
import json, sys
import tensorflow as tf
from tensorflow.python.eager import context
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.task import tf2_board, tf2_runtime
role = roles.resolve_role(flags.parse_command_line([
    'x', '--engine=tf2', '--variable_update=collective_all_reduce',
    '--job_name=worker', '--task_index=0',
    '--worker_hosts=' + sys.argv[1]])[0])
tf2_runtime.configure_coordination_service(role, 60)
tf.distribute.MultiWorkerMirroredStrategy(
    cluster_resolver=tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(role.tf_cluster_def()), task_type='worker',
        task_id=0, rpc_layer='grpc'))
ctx = context.context()
calls = []
for name in ('set_config_key_value', 'delete_config_key_value'):
  def counted(*args, _real=getattr(ctx, name), _name=name):
    calls.append(_name)
    return _real(*args)
  setattr(ctx, name, counted)

def stored():
  return json.loads(ctx.get_config_key_value(tf2_board._KEY % 0,
                                             timeout_in_ms=2000))
board = tf2_board.KeyValueBoard(1, 0)
board.publish_initial(2000)
out = {}
del calls[:]
for _ in range(3):
  board.publish_start(None, 2000, 0.25)
  board.wait_written(2000)
  out['in_step'] = stored()
  board.publish_completion(None, 2000)
out['calls_per_step'] = len(calls) / 3
out['after_step'] = stored()
snapshot = board.read(None, 2000)
board.wait_written(2000)
out['read'] = [snapshot.started[0], snapshot.completed[0],
               snapshot.between_seconds[0]]
out['after_read'] = stored()
board.post_note(None, 0, {'status': 'ok'}, 2000)
out['after_note'] = stored()

# The store stops answering (as a frozen worker 0's does: its calls have
# no deadline): a step's start must not wait for it, a note waits only its
# bound.
import threading, time
never = threading.Event()
ctx.set_config_key_value = lambda *args: never.wait()
ctx.delete_config_key_value = lambda *args: never.wait()
began = time.monotonic()
board.publish_start(None, 2000)
out['start_waited'] = time.monotonic() - began
began = time.monotonic()
try:
  board.post_note(None, 0, {'status': 'failed'}, 1500)
  out['note'] = 'stored'
except tf.errors.DeadlineExceededError as e:
  out['note'] = 'DeadlineExceeded: ' + e.message
out['note_waited'] = time.monotonic() - began
print('BOARD ' + json.dumps(out))
'''


_OUTPUTS = {}


def _run_board_script():
  """What _BOARD_SCRIPT printed (run once for this module's tests)."""
  if not _OUTPUTS:
    address = '127.0.0.1:%d' % helpers.free_port()
    done = subprocess.run([sys.executable, '-c', _BOARD_SCRIPT, address],
                          cwd=helpers.REPO, capture_output=True, text=True,
                          timeout=150, env=helpers.child_env())
    lines = [l for l in done.stdout.splitlines() if l.startswith('BOARD ')]
    assert done.returncode == 0 and lines, done.stdout + done.stderr
    _OUTPUTS.update(json.loads(lines[0][len('BOARD '):]))
  return _OUTPUTS


@pytest.mark.timeout(180)
def test_a_step_writes_the_board_once_and_its_completion_follows():
  """One write (a delete and an insert) per step, at its start, showing the
  previous step completed: nothing more inside a timed step. The last
  completion reaches the store with the next read of the board (the
  watchdog's, every second) and with the exit note, so a task stuck
  between steps shows as such."""
  out = _run_board_script()
  assert out['calls_per_step'] == 2, out
  # Each start also adds the seconds the client spent before it.
  assert out['in_step'] == {'started': 3, 'completed': 2, 'between': 0.75,
                            'note': None}
  assert out['after_step'] == out['in_step']  # not published yet
  assert out['read'] == [3, 3, 0.75], out
  assert out['after_read'] == {'started': 3, 'completed': 3,
                               'between': 0.75, 'note': None}
  assert out['after_note'] == {'started': 3, 'completed': 3, 'between': 0.75,
                               'note': {'status': 'ok'}}


@pytest.mark.timeout(180)
def test_a_store_that_never_answers_holds_no_step_and_a_note_only_its_bound():
  """The store's calls have no deadline, and a frozen worker 0 answers
  none: a step's start is handed to the board's writer thread (a CI run
  hung in that write, before the step whose collectives the coordination
  service aborts), and an exit note waits for it only its own bound."""
  out = _run_board_script()
  assert out['start_waited'] < 0.5, out
  assert out['note'].startswith('DeadlineExceeded: worker 0'), out
  assert 1.4 < out['note_waited'] < 3, out
