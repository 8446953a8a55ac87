"""The pieces that name failures and stalls, without a cluster (fast).

failures.py (messages, root cause), stall_report.py (the report, the
culprit), reachability.py (why a peer cannot be reached),
fault_injection.py (the test-only hook), the launcher's choice of the
first failure, the watchdog's own-activity bound (a checkpoint save that
takes too long), and the checkpointer never saving one step twice.
"""

import glob
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import types

import pytest

from tests import tools
from tests.driver_helpers import REPO, run_quietly
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.run import report
from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.test_hooks import fault_injection
from tf_cnn_benchmarks.cluster.launch import launch_summary
from tf_cnn_benchmarks.cluster.watch import peer_failures
from tf_cnn_benchmarks.cluster.task import progress_board
from tf_cnn_benchmarks.cluster.watch import reachability
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.task import serving_task
from tf_cnn_benchmarks.cluster.watch import stall_report
from tf_cnn_benchmarks.cluster.launch import task_processes
from tf_cnn_benchmarks.cluster.watch import task_checks
from tf_cnn_benchmarks.liveness import watchdog as run_watchdog

pytestmark = pytest.mark.timeout(120)


def _role(job='worker', index=0, mode='parameter_server', sync=True):
  return roles.ClusterRole(
      jobs={'ps': ('127.0.0.1:1',), 'worker': ('127.0.0.1:2', '127.0.0.1:3'),
            'controller': ()},
      job_name=job, task_index=index, protocol='grpc', variable_update=mode,
      cross_replica_sync=sync)


class _Error(Exception):

  def __init__(self, message):
    super().__init__(message)
    self.message = message


# failures.py

def test_first_line_skips_tensorflow_noise():
  error = _Error('Graph execution error:\n\n=====================\n'
                 'UNAVAILABLE: From /job:ps/replica:0/task:0:\nSocket closed\n'
                 'Additional GRPC error information from remote target\n')
  assert failures.first_line(error) == (
      'Socket closed (from /job:ps/replica:0/task:0)')
  assert failures.first_line(_Error('Graph execution error:\n\nassertion '
                                    'failed: [boom]\n\t [[{{node A}}]]')) == (
                                        'assertion failed: [boom]')


def test_secondary_errors_are_recognised():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  assert peer_failures.is_secondary(tf.errors.UnavailableError(None, None, 'x'))
  assert peer_failures.is_secondary(tf.errors.CancelledError(None, None, 'x'))
  assert peer_failures.is_secondary(RuntimeError(
      'Attempted to use a closed Session.'))
  assert not peer_failures.is_secondary(
      tf.errors.ResourceExhaustedError(None, None, 'OOM'))
  # A collective abort keeps the type of the peer's error (here a corrupt
  # record's failed assertion): its words say it is not this task's.
  assert peer_failures.is_secondary(tf.errors.InvalidArgumentError(
      None, None, 'Collective ops is aborted by: assertion failed: '
      '[DATA_ERROR_BEGIN] [1] [14]'))


def test_oom_hint_names_the_shape_and_a_smaller_batch():
  rc = types.SimpleNamespace(batch_size_per_device=64,
                             model=types.SimpleNamespace(image_size=224,
                                                         reads_ids=False))
  hint = failures.oom_hint(rc, 'OOM when allocating tensor with '
                           'shape[64,112,112,64] and type float')
  assert hint == ('Out of memory: TensorFlow asked for 196.0 MiB more '
                  '(shape [64,112,112,64], float) with 64 images per device '
                  'of 224x224; try --batch_size=32.')
  # ncf reads ids: no image size to name.
  rc.model.reads_ids = True
  assert failures.oom_hint(rc, '') == ('Out of memory with 64 examples per '
                                       'device; try --batch_size=32.')


def test_a_full_disk_is_not_called_out_of_memory():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rc = types.SimpleNamespace(
      batch_size_per_device=64, cluster=None,
      params=types.SimpleNamespace(data_dir=None),
      model=types.SimpleNamespace(image_size=224, reads_ids=False))
  full = failures.describe(tf.errors.ResourceExhaustedError(
      None, None, '/tmp/t/model.ckpt-7.data-00000-of-00001.tempstate1; '
      'No space left on device'), rc)
  assert full['hint'] == failures.DISK_FULL_HINT
  oom = failures.describe(tf.errors.ResourceExhaustedError(
      None, None, 'OOM when allocating tensor'), rc)
  assert oom['hint'].startswith('Out of memory')


def test_peer_note_keeps_the_root_task():
  own = failures.failure('ResourceExhaustedError', 'OOM ...', 'worker1', 'h')
  mine = peer_failures.from_peer_note('worker1', 'failed', own)
  assert mine == failures.failure('ResourceExhaustedError',
                                  'worker1 failed first: OOM ...', 'worker1',
                                  'h')
  # A peer that failed because of worker2 passes worker2 on, unchanged.
  relayed = peer_failures.from_peer_note('worker0', 'failed', dict(
      own, task='worker2'))
  assert relayed['task'] == 'worker2' and relayed['message'] == 'OOM ...'


def test_report_lines_end_with_the_root_cause():
  lines = failures.report_lines(peer_failures.peer_gone('ps0', 'h:1'))
  assert lines[0].startswith('Run failed: ps0 is gone: its server at h:1 '
                             'refuses connections')
  assert lines[-1] == 'Root cause: ps0 (PeerGone)'
  assert failures.ROOT_CAUSE_RE.match(lines[-1]).groups() == ('ps0',
                                                              'PeerGone')
  assert failures.report_lines(failures.failure('Stalled', 'm', 'w1'),
                               'stalled')[0] == 'Run stalled: m'
  assert failures.report_lines(failures.failure('Interrupted', 'stopped by '
                                                'SIGTERM'), 'interrupted') == [
      'Interrupted: stopped by SIGTERM.']


def test_a_lost_peer_is_gone_or_unreachable_by_its_probe_alone():
  for reason in (reachability.REFUSED, reachability.RESET):
    status, gone = peer_failures.lost_peer('ps0', 'h:1', reason)
    assert (status, gone['type']) == ('failed', 'PeerGone')
    assert 'crashed or was killed' in gone['message']
  for reason in ('no route to host', 'no answer within 1 s',
                 'network unreachable'):
    status, lost = peer_failures.lost_peer('ps0', 'h:1', reason, 'E: x')
    assert (status, lost['type'], lost['task']) == ('unreachable',
                                                    'PeerUnreachable', 'ps0')
    assert lost['message'] == (
        'ps0 is unreachable at h:1: no answer at all (a network partition '
        'or a frozen host), not a crash; it was lost first (probe: %s) '
        '(this task then saw E: x).' % reason)
    assert 'crash' not in lost['hint']


# worker1's watchdog, once worker0 (at argv[1]) stops answering its probes.
_NO_ROUTE_TO = '127.0.0.2:9'


def _run_with_no_routes(script):
  """The JSON that ``script`` prints last, run with _NO_ROUTE_TO as its
  argument in a network namespace of its own, which has no routes: the
  host of a task whose own link is down."""
  tools.require_root('a network namespace of its own')
  unshare = tools.require_command('unshare', 'apt-get install -y util-linux')
  cut = subprocess.run(
      [unshare, '--net', sys.executable, '-c', script, _NO_ROUTE_TO],
      capture_output=True, text=True, cwd=REPO, timeout=90, check=True)
  return json.loads(cut.stdout.splitlines()[-1])


_LOST_PEER_FROM_WORKER1 = r'''
import json, sys
from tf_cnn_benchmarks.cluster.watch import peer_prober
prober = peer_prober.PeerProber({'worker0': sys.argv[1]}, 'worker1')
ending = prober.lost_peer_ending(None, prober.probe(0.0), lambda label: False)
print(json.dumps([ending.status, ending.failure]))
'''


def test_the_side_of_a_partition_with_no_route_of_its_own_names_itself():
  """Behind a partition each side finds the other unreachable, and the
  launcher took the word of whichever left first: the chaos soak once saw
  a worker whose own link was down leave first, naming its healthy peer.
  A task whose own host has no route to the peer (its link is down) is the
  one cut off and names itself; with a route, the peer is named. The cut
  side is worker1's prober run in a network namespace of its own, which
  has no routes (the wiring in a real cluster: test_partition.py)."""
  status, own = _run_with_no_routes(_LOST_PEER_FROM_WORKER1)
  # Here this host has a route there (the loopback; a UDP connect sends
  # nothing), so a peer that does not answer is the one lost.
  route_status, lost = peer_failures.lost_peer(
      'worker0', _NO_ROUTE_TO, 'no answer within 1 s', 'E: x', 'worker1')
  assert (route_status, lost['type'], lost['task']) == (
      'unreachable', 'PeerUnreachable', 'worker0')
  assert (status, own['type'], own['task']) == (
      'unreachable', peer_failures.CUT_OFF, 'worker1'), own
  assert own['message'] == (
      "worker1's host has no route to worker0 at 127.0.0.2:9 (probe: "
      'network unreachable): its own network link is down or its routes are '
      'gone, so worker1 is the task cut off, not worker0.')
  assert 'ip route' in own['hint']
  # worker0, which has its route, names worker1; the launcher then names
  # worker1 whichever of the two left first.
  seen_by_worker0 = peer_failures.peer_unreachable(
      'worker1', 'h:1', 'no answer within 1 s')
  for first in ('worker0', 'worker1'):
    tasks = [_task(label, exit_codes.UNREACHABLE,
                   1.0 if label == first else 1.1,
                   failures.report_lines(ending, 'unreachable'))
             for label, ending in (('worker0', seen_by_worker0),
                                   ('worker1', own))]
    assert launch_summary.first_failure_of(tasks).label == 'worker1', first


_ROOT_CAUSE_FROM_WORKER1 = r'''
import json, sys
import tensorflow as tf
from tf_cnn_benchmarks.cluster.task import progress_board
from tf_cnn_benchmarks.cluster.watch import root_cause
graph = tf.Graph()
with graph.as_default():
  board = progress_board.ProgressBoard('/cpu:0', 2, 1)
with tf.compat.v1.Session(graph=graph) as sess:
  sess.run(board.initializer)
  ending = root_cause.find(sess, board, ['worker0', 'worker1'], 1,
                           {'worker0': sys.argv[1]},
                           tf.errors.UnavailableError(None, None, 'Socket closed'))
print(json.dumps([ending.status, ending.failure]))
'''


def test_the_root_cause_search_of_a_task_cut_off_names_itself():
  """The other way a task learns it lost a peer: a step's secondary error,
  whose root-cause search (root_cause.find, not the watchdog's prober)
  must also tell the search's own task, so that the task cut off names
  itself. Run as worker1 (index 1 of the board's labels) in a network
  namespace with no routes; a real local board with no notes."""
  status, own = _run_with_no_routes(_ROOT_CAUSE_FROM_WORKER1)
  assert (status, own['type'], own['task']) == (
      'unreachable', peer_failures.CUT_OFF, 'worker1'), own
  assert 'Socket closed' in own['message'], own


def test_signal_deaths_are_explained():
  assert 'out-of-memory killer' in peer_failures.killed_by_signal(
      'worker3', signal.SIGKILL)


# reachability.py

def test_probe_says_why_a_peer_cannot_be_reached():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    assert reachability.probe('127.0.0.1:%d' % port) == reachability.REFUSED
    s.listen(1)
    assert reachability.probe('127.0.0.1:%d' % port) is None
  # .invalid never resolves (RFC 6761): the name does not exist.
  assert reachability.probe('no-such-host.invalid:2222').startswith(
      reachability.NO_SUCH_NAME)


def test_two_refusals_in_a_row_mean_a_peer_is_gone():
  count = reachability.RefusalCount()
  count.saw('worker1', reachability.REFUSED)
  count.saw('ps0', 'timed out')
  assert not count.gone('worker1')
  count.saw('worker1', None)  # it answered: start again
  count.saw('worker1', reachability.REFUSED)
  assert not count.gone('worker1')
  count.saw('worker1', reachability.REFUSED)
  assert count.gone('worker1') and not count.gone('ps0')
  assert count.labels() == ['ps0', 'worker1']


# serving_task.py

def test_refusals_before_a_client_arrived_do_not_make_it_gone(monkeypatch):
  # The coordinator's port refuses while it is still starting; once it
  # arrives, those refusals say nothing: it takes REFUSALS_TO_GONE in a row
  # after that (chaos seeds 286 and 180: a ps left at the ARRIVED).
  answers = []
  monkeypatch.setattr(serving_task, 'PROBE_EVERY_SECONDS', 0.0)
  monkeypatch.setattr(reachability, 'probe_all',
                      lambda addresses, timeout: {
                          label: answers.pop(0) for label in addresses})
  watch = serving_task.ClientWatch({'controller0': 'h:1'}, 600, None)
  for _ in range(reachability.REFUSALS_TO_GONE + 1):
    answers.append(reachability.REFUSED)
    watch.probe(['controller0'])
  assert watch.lost('controller0') is None  # late, not gone
  watch.arrived('controller0')
  assert watch.lost('controller0') is None
  answers.append(reachability.REFUSED)
  watch.probe(['controller0'])
  assert watch.lost('controller0') is None  # one refusal: maybe a restart
  for _ in range(reachability.REFUSALS_TO_GONE - 1):
    answers.append(reachability.REFUSED)
    watch.probe(['controller0'])
  status, why = watch.lost('controller0')
  assert status == 'failed' and 'refuses connections at h:1' in why


def test_a_client_that_answered_then_refuses_is_gone(monkeypatch):
  # Refusals after its server was reached count, arrival or not.
  answers = [None] + [reachability.REFUSED] * reachability.REFUSALS_TO_GONE
  monkeypatch.setattr(serving_task, 'PROBE_EVERY_SECONDS', 0.0)
  monkeypatch.setattr(reachability, 'probe_all',
                      lambda addresses, timeout: {
                          label: answers.pop(0) for label in addresses})
  watch = serving_task.ClientWatch({'worker0': 'h:2'}, 600, None)
  while answers:
    watch.probe(['worker0'])
  assert watch.lost('worker0')[0] == 'failed'


_PS_LEAVING_WORDS = r'''
import json, sys
from tf_cnn_benchmarks.cluster.task import serving_task
watch = serving_task.ClientWatch({'worker0': sys.argv[1], 'worker1': sys.argv[1]},
                                 600, None)
lost = {label: ('unreachable', 'unreachable for 60 s') for label in watch.clients}
print(json.dumps(serving_task.leaving_words(lost, watch.cut_off(lost, 'ps0'))))
'''


def test_a_ps_with_no_route_of_its_own_says_it_is_the_one_cut_off():
  """A serving task whose clients all went silent says they are
  unreachable, unless its own host has no route to them: then its link is
  down and it names itself, as a worker does. The cut side runs in a
  network namespace with no routes (end to end: test_partition.py's
  partition that never heals, where the ps's link goes down)."""
  code, words = _run_with_no_routes(_PS_LEAVING_WORDS)
  assert code == exit_codes.UNREACHABLE
  assert words.startswith(
      "exiting: ps0's host has no route to worker0 at 127.0.0.2:9"), words
  assert 'so ps0 is the task cut off, not worker0.' in words, words
  assert '`ip route`' in words and 'worker1 unreachable for 60 s' in words
  # With a route here, the clients are the ones unreachable.
  watch = serving_task.ClientWatch({'worker0': _NO_ROUTE_TO}, 600, None)
  lost = {'worker0': ('unreachable', 'unreachable for 60 s')}
  assert watch.cut_off(lost, 'ps0') is None
  assert serving_task.leaving_words(lost, None) == (
      exit_codes.UNREACHABLE, 'exiting: worker0 unreachable; waited as long '
      'as a worker would (worker0 unreachable for 60 s)')


def test_wait_for_names_each_missing_task_with_its_reason():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    refused = '127.0.0.1:%d' % s.getsockname()[1]
    with pytest.raises(reachability.ClusterWaitTimeout) as info:
      reachability.wait_for({'ps0': refused, 'ps1': 'nohost.invalid:1'},
                            0.3, 'worker0 cannot start')
  message = str(info.value)
  assert 'ps0 (%s: connection refused)' % refused in message
  assert 'ps1 (nohost.invalid:1: no such host name' in message
  assert info.value.missing == ['ps0', 'ps1']
  assert info.value.exit_code == exit_codes.UNREACHABLE


# fault_injection.py

def test_fault_spec_applies_to_the_named_task_only():
  env = {fault_injection.ENV: 'stall:worker1:step5'}
  assert fault_injection.planned_for('worker1', env) == (
      fault_injection.Fault('stall', 'worker1', 5))
  assert fault_injection.planned_for('worker0', env) is None
  assert fault_injection.planned_for('worker1', {}) is None
  with pytest.raises(ValueError, match='<kind>:<task>:step<N>'):
    fault_injection.planned_for('worker1', {fault_injection.ENV: 'oops'})


def test_oom_fault_raises_a_real_resource_exhausted_error():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  fault = fault_injection.Fault('oom', 'worker1', 2)
  fault.before_step(1, lambda text: None)  # not yet
  with pytest.raises(tf.errors.ResourceExhaustedError, match='OOM'):
    fault.before_step(2, lambda text: None)


# stall_report.py

def _snapshot(started, completed, notes=None):
  return progress_board.Snapshot(tuple(started), tuple(completed),
                           tuple(notes or [None] * len(started)))


def test_stall_report_names_steps_missing_tasks_and_the_wait():
  snapshot = _snapshot([8, 7, 8], [7, 7, 7])
  labels = ['worker0', 'worker1', 'worker2']
  assert stall_report.culprit('worker0', snapshot, labels) == 'worker1'
  waiting = stall_report.waiting_for(_role(), 'step 8', ['worker1'])
  assert waiting == ("step 8: waiting for every worker's gradient before "
                     'applying the update (missing: worker1)')
  lines = stall_report.report(
      'worker0', 31, 30, snapshot, labels,
      {'worker1': ('h:2', None), 'ps0': ('h:1', 'no route to host'),
       'worker2': ('h:3', reachability.REFUSED)}, None,
      waiting, 31, 10)
  assert lines == [
      'Stall report from worker0: no step completed in the cluster for 31 s '
      '(--stall_timeout=30).',
      '  steps: worker0 in step 8, worker1 done with step 7, not in a step, '
      'worker2 in step 8',
      '  missing from the newest step: worker1; worker1 answers its port, so '
      'it is alive but stuck',
      '  unreachable: ps0 (h:1: no route to host)',
      '  gone: worker2 (h:3: connection refused)',
      "  this task: step 8: waiting for every worker's gradient before "
      'applying the update (missing: worker1), for 31 s',
      '  exiting in 10 s (--stall_shutdown_timeout) unless the cluster moves']


def test_a_frozen_peer_is_the_culprit_and_not_called_alive():
  # worker1 froze inside step 8 (counted as started): the board shows
  # nobody behind; only the frozen probe names it.
  snapshot = _snapshot([8, 8], [7, 7])
  labels = ['worker0', 'worker1']
  frozen = {'worker1': reachability.FROZEN}
  assert stall_report.culprit('worker0', snapshot, labels) == 'worker0'
  assert stall_report.culprit('worker0', snapshot, labels,
                              frozen) == 'worker1'
  probes = stall_report.with_frozen({'worker1': ('h:2', None)}, frozen)
  lines = stall_report.report('worker0', 31, 30, snapshot, labels, probes,
                              None, 'step 8', 31, 10)
  assert '  frozen: worker1 (h:2: %s)' % reachability.FROZEN in lines


def test_waiting_for_depends_on_the_mode():
  assert 'sync token' in stall_report.waiting_for(_role(index=1), 'step 3',
                                                  [])
  assert 'all-reduce' in stall_report.waiting_for(
      _role(mode='collective_all_reduce'), 'step 3', [])
  assert 'ps tasks' in stall_report.waiting_for(_role(sync=False), 'step 3',
                                                [])
  assert stall_report.waiting_for(_role(), 'saving a checkpoint', []) == (
      'saving a checkpoint')


def test_a_stall_is_reported_once_then_ended_or_reported_again():
  action = stall_report.next_action
  # First report at once; with a 10 s shutdown timeout, the end 10 s later.
  assert action(100.0, None, 30, 10) == stall_report.REPORT
  assert action(109.0, 100.0, 30, 10) is None
  assert action(110.0, 100.0, 30, 10) == stall_report.END
  # Without one (0: nobody ends the run), a new report every stall_timeout.
  assert action(129.0, 100.0, 30, 0) is None
  assert action(130.0, 100.0, 30, 0) == stall_report.REPORT


# The launcher's first failure.

class _FakeProcess:

  def __init__(self, code):
    self.code = code

  def poll(self):
    return self.code


def _task(label, code, exited_at, lines=()):
  task = task_processes.Task(label, label.rstrip('0123456789'), 'h:1', [])
  task.process = _FakeProcess(code)
  task.exited_at = exited_at
  task.lines = list(lines)
  return task


def test_the_launcher_confirms_every_remote_task_gone_at_once():
  """At teardown the launcher asks each remote host, over ssh, to kill
  its task and say "gone" (up to 30 s each). Asked one after another,
  three hosts that are slow to answer cost three waits."""
  reap = [sys.executable, '-c',
          'import time; time.sleep(2); print("still there")']
  tasks = []
  for i in range(3):
    task = task_processes.RemoteTask(
        'worker%d' % i, 'worker', 'h:1', [], 'h%d' % i,
        reap_argv=lambda *a: reap)
    task.process = _FakeProcess(0)
    task.remote_pid = 100 + i
    tasks.append(task)
  started = time.monotonic()
  unconfirmed = task_processes.Supervisor(tasks).teardown()
  took = time.monotonic() - started
  assert sorted(unconfirmed) == ['worker0', 'worker1', 'worker2']
  assert "ssh to h1 to kill it (pid 101) said: still there" == (
      unconfirmed['worker1'])
  assert took < 4.5, took  # one 2 s wait; in turn, 6 s


def test_launcher_follows_the_root_cause_line():
  tasks = [
      _task('worker0', 1, 1.0, ['Run failed: worker1 failed first: OOM',
                                'Root cause: worker1 (ResourceExhaustedError)']),
      _task('worker1', 1, 1.2, ['Run failed: OOM when allocating',
                                'Hint: try --batch_size=1',
                                'Root cause: worker1 (ResourceExhaustedError)']),
      _task('ps0', 0, 2.0)]
  first = launch_summary.first_failure_of(tasks)
  assert first.label == 'worker1'
  assert launch_summary.describe_first_failure(first) == [
      'First failure: worker1: OOM when allocating',
      'Hint: try --batch_size=1']
  assert launch_summary.exit_code(tasks) == exit_codes.RUN_FAILED


def test_the_summary_gives_a_stopped_task_s_own_exit():
  """A task the launcher stopped still shows how it ended: 130 (it stopped
  and recorded itself) is not SIGKILL after the grace."""
  tasks = [_task('worker0', 1, 1.0), _task('worker1', 130, 2.0),
           _task('ps0', -9, 3.0)]
  for task in tasks[1:]:
    task.stopped_by_launcher = True
  lines = []
  launch_summary.summarize(tasks, lines.append)
  assert [l.split() for l in lines[1:4]] == [
      ['worker0', 'exit', '1'],
      ['worker1', 'stopped', 'by', 'the', 'launcher:', 'exit', '130'],
      ['ps0', 'stopped', 'by', 'the', 'launcher:', 'killed', 'by', 'SIGKILL']]


def _unreachable(label, peer, exited_at):
  return _task(label, 4, exited_at, [
      'Run failed: %s is unreachable at h:1: no answer at all' % peer,
      'Root cause: %s (PeerUnreachable)' % peer])


def test_launcher_names_the_task_cut_off_by_a_partition():
  """worker0's link went down: it finds its peers unreachable and names one
  (exiting first), each of the others names worker0 (chaos soak seed
  1033)."""
  tasks = [_unreachable('worker0', 'worker1', 1.0),
           _unreachable('worker1', 'worker0', 1.1),
           _unreachable('worker2', 'worker0', 1.2)]
  assert launch_summary.first_failure_of(tasks).label == 'worker0'
  # Seen in the other order, the same answer.
  tasks[0].exited_at = 2.0
  assert launch_summary.first_failure_of(tasks).label == 'worker0'
  # Two tasks cut from each other, nobody else: the earliest one's word.
  assert launch_summary.first_failure_of(
      [_unreachable('worker0', 'worker1', 1.0),
       _unreachable('worker1', 'worker0', 1.1)]).label == 'worker1'


def test_launcher_names_a_killed_task_and_exits_1():
  tasks = [_task('worker1', -signal.SIGKILL, 1.0),
           _task('worker0', 3, 5.0, ['Run stalled: ...'])]
  first = launch_summary.first_failure_of(tasks)
  assert first.label == 'worker1'
  assert launch_summary.describe_first_failure(first)[0].startswith(
      'First failure: worker1 was killed by SIGKILL')
  assert launch_summary.exit_code(tasks) == exit_codes.RUN_FAILED


# The watchdog bounds this task's own work (e.g. a checkpoint save).

@pytest.mark.timeout(30)
def test_watchdog_reports_then_ends_a_save_that_takes_too_long():
  ended = []
  done = threading.Event()

  class _Exit:

    def end(self, ending, anyway):
      del anyway
      ended.append(ending)
      done.set()  # returning = "the main thread ended the run first"

  out = io.StringIO()
  params = types.SimpleNamespace(startup_timeout=60, stall_timeout=1,
                                 stall_shutdown_timeout=1)
  with run_watchdog.Watchdog(_Exit(), report.Reporter(out).say) as run:
    dog = task_checks.TaskChecks(_role(), params, deadlines.StartupClock(60),
                                 {}, {}, run, ended.append)
    dog.training_started(None, None, ['worker0', 'worker1'], 0)
    dog.training_ended()  # finishing: only this task's own work is watched
    dog.start()
    with dog.doing('saving a checkpoint to /tmp/x'):
      assert done.wait(10)
  status, code, failure = ended[0].status, ended[0].exit_code, ended[0].failure
  assert (status, code) == ('stalled', exit_codes.STALLED)
  assert failure['task'] == 'worker0'
  assert 'saving a checkpoint to /tmp/x' in failure['message']
  assert 'Stall report from worker0' in out.getvalue()
  assert '  this task: saving a checkpoint to /tmp/x, for ' in out.getvalue()


# The checkpointer saves progress only.

@pytest.mark.timeout(120)
def test_no_checkpoint_is_written_twice_for_one_step(tmp_path, monkeypatch):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # Every save, by global step: a second save of step 4 rewrites the same
  # files, so only the saver's calls can show it.
  saved = []
  save = tf.compat.v1.train.Saver.save

  def counted(saver, sess, path, global_step=None, **kwargs):
    saved.append(global_step)
    return save(saver, sess, path, global_step=global_step, **kwargs)

  monkeypatch.setattr(tf.compat.v1.train.Saver, 'save', counted)
  train_dir = str(tmp_path / 'train')
  result, text = run_quietly(model='trivial', data_name='cifar10',
                             batch_size=2, num_batches=4,
                             num_warmup_batches=0, train_dir=train_dir,
                             save_model_steps=2)
  assert result.exit_code == 0, text
  # Saves at steps 2 and 4; the end-of-run save finds step 4 saved.
  steps = sorted(int(p.rsplit('-', 1)[1].split('.')[0]) for p in
                 glob.glob(os.path.join(train_dir, 'model.ckpt-*.index')))
  assert steps == [2, 4]
  assert saved == [2, 4]
  assert result.checkpoint_path.endswith('model.ckpt-4')


def test_launcher_gives_the_survivors_their_own_bound_after_a_failure():
  """A task that lost a peer ends by itself at the latest when its stall
  ends; the launcher stops it only after that (sooner, its record would
  say "interrupted" instead of naming the peer). With no stall bound, the
  grace is still finite: the launcher always ends."""
  bounded = types.SimpleNamespace(stall_timeout=60, stall_shutdown_timeout=30)
  assert deadlines.lost_peer_end_seconds(bounded) > 60 + 30
  assert deadlines.step_deadline_seconds(bounded) > 60 + 30
  for stall, shutdown in ((0, 30), (60, 0)):
    unbounded = types.SimpleNamespace(stall_timeout=stall,
                                      stall_shutdown_timeout=shutdown)
    assert deadlines.step_deadline_seconds(unbounded) is None
    assert 0 < deadlines.lost_peer_end_seconds(unbounded) < float('inf')
