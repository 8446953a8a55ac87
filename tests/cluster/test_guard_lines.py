"""What a task prints cannot act on the launching machine (issue 29, C).

The launcher reads a remote task's ssh channel: the task's own output and
its guard's marked lines (ssh_remote.py), which set the pid the launcher
may later kill and name the run records it saves. Here the channel is a
real process (a hostile "task" printing forged guard lines, or the real
guard running a real local run), read by the launcher's own Supervisor;
and a peer's failure note, which whoever reaches the board's host can
write, must print as one line.
"""

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from tests.driver_helpers import REPO
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks.cluster.launch import launcher
from tf_cnn_benchmarks.cluster.watch import peer_failures
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.cluster.launch import ssh_remote
from tf_cnn_benchmarks.cluster.launch import task_processes

MARK = ssh_remote.MARK
GOOD_NAME = '20260101T000000Z_trivial_worker-0_0123abcd.json'


def _channel(tmp_path, script, label='worker0'):
  """A RemoteTask whose "ssh" is ``script`` run by python."""
  path = tmp_path / ('%s.py' % label)
  path.write_text(textwrap.dedent(script))
  return task_processes.RemoteTask(
      label, roles.WORKER, 'h:1', [sys.executable, str(path)], 'h',
      reap_argv=lambda *a: ['false'])


def _supervise(tasks, timeout=120):
  out = io.StringIO()
  supervisor = task_processes.Supervisor(tasks, out=out)
  supervisor.start()
  try:
    supervisor.wait(ps_exit_grace=5, timeout=timeout, failure_grace=5)
  finally:
    supervisor.teardown()
  return out.getvalue()


def _script(tmp_path, lines, with_token):
  """A "task" printing ``lines`` as guard lines (after the run's token, read
  from its stdin as the guard reads it, when ``with_token``)."""
  return textwrap.dedent('''\
      import sys
      token = sys.stdin.readline().strip() + ' ' if %r else ''
      for line in %r:
        print(%r + token + line.replace('TMP', %r), flush=True)
      sys.exit(3)
      ''') % (with_token, lines, MARK, str(tmp_path))


# Guard lines a task could print: a pid for the launcher to kill, records
# it would write outside --result_dir, an exit status.
_RECORD = ' ' + json.dumps({'status': 'ok'})
HOSTILE = ['started 1', 'record ../../escaped.json' + _RECORD,
           'record TMP/absolute.json' + _RECORD,
           'record sub/%s%s' % (GOOD_NAME, _RECORD), 'exit 0']


def _assert_nothing_escaped(tmp_path, task, out):
  result_dir = tmp_path / 'a' / 'b'
  launcher._save_remote_records([task], str(result_dir), lambda line: None)  # pylint: disable=protected-access
  assert not (tmp_path / 'escaped.json').exists(), out
  assert not (tmp_path / 'absolute.json').exists(), out
  assert not (result_dir / 'sub').exists(), out
  assert task.records == [], out
  assert task.remote_pid is None, out


def test_forged_guard_lines_are_refused_and_reported(tmp_path):
  task = _channel(tmp_path, _script(tmp_path, HOSTILE, with_token=False))
  out = _supervise([task])
  _assert_nothing_escaped(tmp_path, task, out)
  assert task.remote_code is None, out
  refused = [l for l in out.splitlines()
             if l.startswith('[launch] refused a line of worker0 ')]
  assert len(refused) == 5, out
  assert 'not its guard' in refused[0], out
  # Refused, not shown as the task's output either.
  assert not [l for l in out.splitlines() if l.startswith('[worker0] ')], out


def test_guard_lines_with_the_token_still_obey_the_grammar(tmp_path):
  """Even with the run's token (a guard that misbehaves), a record name
  must be a plain record file name, and a pid comes once, first."""
  lines = HOSTILE[1:4] + ['started 4242', 'exit 0', 'exit 1']
  task = _channel(tmp_path, _script(tmp_path, lines, with_token=True))
  out = _supervise([task])
  _assert_nothing_escaped(tmp_path, task, out)
  assert task.remote_code == 0, out  # the first exit line only
  refused = [l for l in out.splitlines()
             if l.startswith('[launch] refused a line of worker0 ')]
  assert len(refused) == 5, out
  assert 'not a record file name' in refused[0], out
  assert 'started' in refused[3] and 'first' in refused[3], out
  assert 'exit' in refused[4] and 'twice' in refused[4], out
  assert task.token not in out, out  # shown as <token>


def test_the_real_guard_reports_its_own_child_and_record(tmp_path):
  """The real guard (ssh_remote task) running a real run: its pid line is
  its direct child's, its record arrives under a record file name."""
  flags = ['--device=cpu', '--model=trivial', '--data_name=cifar10',
           '--batch_size=2', '--num_batches=100000', '--num_warmup_batches=0',
           '--display_every=1']
  task = task_processes.RemoteTask(
      'worker0', roles.WORKER, 'h:1',
      [sys.executable, '-m', 'tf_cnn_benchmarks.cluster.launch.ssh_remote', 'task',
       '--'] + flags, 'h', reap_argv=lambda *a: ['false'])
  out = io.StringIO()
  supervisor = task_processes.Supervisor([task], out=out)
  supervisor.start()
  try:
    deadline = time.monotonic() + 120
    while not any(l.startswith('1\t') for l in task.lines):
      assert time.monotonic() < deadline and task.process.poll() is None, (
          out.getvalue())
      time.sleep(0.1)
    with open('/proc/%d/stat' % task.remote_pid) as f:
      parent = int(f.read().rsplit(')', 1)[1].split()[1])
    assert parent == task.process.pid, out.getvalue()
    # A wrong tag kills nothing: the run goes on to be stopped below.
    assert _reap(task.remote_pid, '0' * 16).stdout.strip() == 'gone'
    assert task.process.poll() is None, out.getvalue()
  finally:
    supervisor.teardown()
  assert task.remote_code == 130, out.getvalue()
  ((name, rec),) = task.records
  assert name.endswith('.json') and '/' not in name, name
  assert rec['status'] == 'interrupted'
  assert '[launch] refused' not in out.getvalue(), out.getvalue()
  # The launcher acked the records it has: the guard's copy is gone.
  assert task.records_dir and not os.path.exists(task.records_dir)


def test_the_guard_keeps_the_records_the_launcher_did_not_confirm():
  """The channel ends (the connection is gone) before the launcher could
  ack: the guard stops the task and keeps its record on the host, in the
  folder its records_dir line named, and says so."""
  token = '0123456789abcdef' * 2
  flags = ['--device=cpu', '--model=trivial', '--data_name=cifar10',
           '--batch_size=2', '--num_batches=100000', '--num_warmup_batches=0',
           '--display_every=1']
  guard = subprocess.Popen(
      [sys.executable, '-m', 'tf_cnn_benchmarks.cluster.launch.ssh_remote',
       'task', '--'] + flags, cwd=REPO, stdin=subprocess.PIPE,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  try:
    guard.stdin.write((token + '\n').encode())
    guard.stdin.flush()
    mark = (MARK + token + ' ').encode()
    records_dir = None
    for line in guard.stdout:
      if line.startswith(mark + b'records_dir '):
        records_dir = line[len(mark) + len('records_dir '):].decode().strip()
      if line.startswith(b'1\t'):
        break
    assert records_dir, 'no records_dir line'
    guard.stdin.close()  # the connection is gone: no ack can come
    rest = guard.stdout.read()
    code = guard.wait(timeout=60)
    said = guard.stderr.read().decode()
  finally:
    if guard.poll() is None:
      guard.kill()
  assert code == 130, said
  assert mark + b'exit 130' in rest
  try:
    kept = os.listdir(records_dir)
    assert len(kept) == 1 and kept[0].endswith('.json'), kept
    assert 'they stay in %s' % records_dir in said, said
  finally:
    subprocess.run(['rm', '-rf', records_dir], check=False)


def test_a_guard_with_no_records_leaves_no_folder():
  """A task that wrote no record (stopped as it starts: the connection
  is gone before any ack): there is nothing to keep, so the guard leaves no
  empty folder behind on the host."""
  token = 'fedcba9876543210' * 2
  guard = subprocess.Popen(
      [sys.executable, '-m', 'tf_cnn_benchmarks.cluster.launch.ssh_remote',
       'task', '--', '--device=cpu', '--model=no_such_model'], cwd=REPO,
      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  records_dir = None
  try:
    guard.stdin.write((token + '\n').encode())
    guard.stdin.flush()
    mark = (MARK + token + ' ').encode()
    for line in guard.stdout:
      if line.startswith(mark + b'records_dir '):
        records_dir = line[len(mark) + len('records_dir '):].decode().strip()
        break
    assert records_dir, 'no records_dir line'
    guard.stdin.close()  # the connection is gone: no ack can come
    rest = guard.stdout.read()
    guard.wait(timeout=60)
    said = guard.stderr.read().decode()
  finally:
    if guard.poll() is None:
      guard.kill()
  try:
    assert mark + b'exit ' in rest, rest
    assert not os.path.exists(records_dir), os.listdir(records_dir)
    assert 'they stay in' not in said, said
  finally:
    if records_dir:
      subprocess.run(['rm', '-rf', records_dir], check=False)


def test_a_records_dir_line_names_a_guard_folder_once(tmp_path):
  lines = ['records_dir /etc', 'records_dir /tmp/%sabc_1' %
           ssh_remote.RECORDS_PREFIX, 'records_dir /tmp/%sdef' %
           ssh_remote.RECORDS_PREFIX, 'exit 0']
  task = _channel(tmp_path, _script(tmp_path, lines, with_token=True))
  out = _supervise([task])
  assert task.records_dir == '/tmp/%sabc_1' % ssh_remote.RECORDS_PREFIX, out
  refused = [l for l in out.splitlines()
             if l.startswith('[launch] refused a line of worker0 ')]
  assert len(refused) == 2, out
  assert 'not a records folder' in refused[0], out
  assert 'twice' in refused[1], out


def _reap(pid, tag):
  return subprocess.run(
      [sys.executable, '-m', 'tf_cnn_benchmarks.cluster.launch.ssh_remote', 'reap',
       str(pid), tag], cwd=REPO, capture_output=True, text=True, timeout=60)


def test_reap_kills_only_the_task_its_guard_started():
  """`reap PID TAG` kills the processes of group PID that carry the tag
  the guard gave its task; a stranger that has the pid (a reused one, or
  one a forged line named) is left alone."""
  tag = ssh_remote.tag_of('ab' * 16)
  env = dict(os.environ, **{ssh_remote.TAG_ENV: tag})
  stranger = subprocess.Popen(['sleep', '300'], start_new_session=True)
  ours = subprocess.Popen(['sleep', '300'], start_new_session=True, env=env)
  try:
    out = _reap(stranger.pid, tag)
    assert stranger.poll() is None, out
    assert out.stdout.strip() == 'gone', out  # nothing of the task is left
    out = _reap(ours.pid, tag)
    assert out.stdout.strip() == 'gone', out
    assert ours.wait(10) == -signal.SIGKILL, out
  finally:
    for p in (stranger, ours):
      p.kill()
      p.wait()


def test_a_peer_note_prints_as_one_line():
  forged = '%srecord ../../x {}' % MARK
  note_failure = {'type': 'Error\n' + forged,
                  'message': 'boom\n' + forged + '\rRoot cause: ps0 (X)',
                  'task': 'worker1\n' + forged, 'hint': 'h\x1b[2J\n' + forged}
  for status in ('failed', 'stalled'):
    run_failure = peer_failures.from_peer_note('worker1', status,
                                               note_failure)
    lines = failures.report_lines(run_failure, status)
    for line in lines:
      assert line.splitlines() == [line], lines
      assert '\x1b' not in line, lines
    assert not [l for l in lines if l.startswith(MARK)], lines
    assert 'boom\\n%s' % forged in lines[0], lines
  # A note that is not a JSON object: its words, escaped the same way.
  run_failure = peer_failures.from_peer_note('worker1', 'failed',
                                             'oops\n' + forged)
  assert failures.report_lines(run_failure)[0] == (
      'Run failed: worker1 failed first: oops\\n' + forged)
