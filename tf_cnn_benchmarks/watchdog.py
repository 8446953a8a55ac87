"""A cluster task's watchdog: no task hangs silently, every end is explained.

A thread beside the main thread, which spends its time inside TensorFlow
calls that may never return (a synchronous step whose peer died, a
session whose peer is absent, a link that went down). Once a second it:

  * start-up: ends the task when one activity (creating the session,
    initialising, a barrier) has lasted --startup_timeout plus a grace
    (TensorFlow cannot cancel session creation; the barriers' own bounds
    normally fire first), naming the peers it cannot reach;
  * training: reads the progress board (liveness.py) with a bounded run.
    A peer's failure note ends a synchronous task at once with the peer's
    original error; with no progress for a few step times it probes the
    peers, and a peer that is gone (connection refused) ends a
    synchronous task naming it. No progress anywhere for --stall_timeout
    (or this task's own work stuck that long) prints a stall report;
    --stall_shutdown_timeout later, still stuck, the task ends: status
    "stalled" (exit 3), or "unreachable" (exit 4) when a peer cannot be
    reached;
  * any time: SIGINT/SIGTERM while the main thread is stuck inside
    TensorFlow (Python runs signal handlers only between bytecodes, so
    the driver's between-steps check never sees it) ends the task as
    "interrupted" after a short grace.

Ending is the coordination's job (``end_run``): it writes the run record
with what happened, tells the serving tasks this client is done, and
leaves with os._exit, past the blocked call. In an asynchronous cluster a
peer's failure or absence is reported once and training goes on.
"""

import collections
import contextlib
import os
import select
import signal
import statistics
import sys
import threading
import time
import traceback

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures
from tf_cnn_benchmarks import reachability
from tf_cnn_benchmarks import stall_report

TICK_SECONDS = 1.0
# Start-up activities get this long past --startup_timeout (at most; as
# much again for a short one): the waits that can time out by themselves
# do so first and say more.
STARTUP_GRACE_SECONDS = 15.0
# Probe peers once the cluster has been quiet this long (or 3 step times).
SUSPECT_AFTER_SECONDS = 2.0
# Bound of one board read.
BOARD_READ_SECONDS = 3.0
# A signal the main thread has not acted on in this long is acted on here.
SIGNAL_GRACE_SECONDS = 2.0

STARTING, TRAINING, FINISHING = 'starting', 'training', 'finishing'
# How the coordination names the first run of its session (which TensorFlow
# cannot bound).
CREATING_SESSION = 'creating the session'


_PEER_ENDS = {'stalled': ('stalled', exit_codes.STALLED),
              'unreachable': ('unreachable', exit_codes.UNREACHABLE)}


class _Ended(Exception):
  """The run has ended (here or in the main thread): stop watching."""


class _OneCallAtATime:
  """Runs a call in a helper thread and waits for it at most N seconds.

  A read of the board is bounded by its RunOptions, but a call TensorFlow
  cannot cancel (a peer behind a partition) must not take the watchdog
  with it: the watchdog stops waiting, and starts no second call while the
  first is still out.
  """

  def __init__(self):
    self._pending = None
    self._pending_since = None

  def call(self, fn, seconds):
    """(True, value) / (False, exception or why there is no answer)."""
    if self._pending is not None and self._pending.is_alive():
      return False, 'no answer for %.0f s' % (time.monotonic() -
                                              self._pending_since)
    box = {}

    def target():
      try:
        box['value'] = fn()
      except Exception as e:  # pylint: disable=broad-except
        box['error'] = e
    thread = threading.Thread(target=target, daemon=True)
    self._pending, self._pending_since = thread, time.monotonic()
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
      return False, 'no answer within %.0f s' % seconds
    if 'error' in box:
      return False, box['error']
    return True, box['value']


class Watchdog:
  """Watches this task and the cluster; see the module docstring."""

  def __init__(self, role, params, peers, session_peers, end_run,
               note_peer_failure, out=None):
    """``peers``: {label: address} of every other task of the cluster;
    ``session_peers``: those this task's session waits for when created.

    ``end_run(status, exit_code, failure, lines)`` prints ``lines``,
    records the run and ends the process; it returns only when the main
    thread has already ended the run itself. ``note_peer_failure(failure)``
    records a peer's failure this task carries on after (asynchronous).
    """
    self.role = role
    self.params = params
    self.peers = dict(peers)
    self.session_peers = dict(session_peers)
    self._end_run = end_run
    self._note_peer_failure = note_peer_failure
    self._out = out or sys.stdout
    self._lock = threading.Lock()
    self._phase = STARTING
    self._activity = ('starting up', time.monotonic())
    self._step_seconds = collections.deque(maxlen=20)  # the latest steps
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._loop, name='watchdog',
                                     daemon=True)
    self._reader = _OneCallAtATime()
    # Training state.
    self._sess = None
    self._board = None
    self._labels = []
    self._own_index = None
    self._snapshot = None
    self._snapshot_at = None
    self._board_error = None
    self._last_completed = None
    self._last_progress = None
    self._client_changed = {}  # client index -> when its count last moved
    self._stall_reported_at = None
    self._refusals = reachability.RefusalCount()
    self._bad_since = {}  # label -> when probes started failing
    self._probes = {}
    self._last_probe = 0.0
    self._said = set()
    # Signals.
    self._signal_name = None
    self._signal_at = None
    self._wakeup = None
    self._previous_wakeup = None

  # -- main thread

  def start(self):
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    try:
      # The C-level signal handler writes the signal number here even while
      # the main thread is blocked in TensorFlow.
      self._previous_wakeup = signal.set_wakeup_fd(
          write_end, warn_on_full_buffer=False)
      self._wakeup = (read_end, write_end)
    except ValueError:  # Not the main thread: signals are not ours.
      os.close(read_end)
      os.close(write_end)
    self._thread.start()

  def stop(self):
    self._stop.set()
    self._thread.join(timeout=2 * TICK_SECONDS)
    with self._lock:
      if self._wakeup is not None:
        try:
          signal.set_wakeup_fd(self._previous_wakeup)
        except ValueError:
          pass
        for fd in self._wakeup:
          os.close(fd)
        self._wakeup = None

  @contextlib.contextmanager
  def doing(self, text, step=False):
    """The main thread is doing ``text`` (a step when ``step``)."""
    with self._lock:
      previous = self._activity[0]
      started = time.monotonic()
      self._activity = (text, started)
    try:
      yield
    finally:
      now = time.monotonic()
      with self._lock:
        if step:
          self._step_seconds.append(now - started)
        self._activity = (previous, now)

  def say(self, text):
    """Renames the current activity (same start time)."""
    with self._lock:
      self._activity = (text, self._activity[1])

  def training_started(self, sess, board, labels, own_index):
    with self._lock:
      self._sess, self._board = sess, board
      self._labels, self._own_index = list(labels), own_index
      self._last_progress = time.monotonic()
      self._activity = ('between steps', time.monotonic())
      self._phase = TRAINING

  def training_ended(self):
    with self._lock:
      self._phase = FINISHING
      self._stall_reported_at = None

  # -- watchdog thread

  def _print(self, lines):
    for line in lines:
      self._out.write(line + '\n')
    self._out.flush()

  def _say_once(self, key, line):
    if key not in self._said:
      self._said.add(key)
      self._print([line])

  def _loop(self):
    while not self._stop.is_set():
      self._wait_for_tick()
      if self._stop.is_set():
        return
      try:
        self._check(time.monotonic())
      except _Ended:
        return
      except Exception:  # pylint: disable=broad-except
        # The watchdog must outlive its own bugs; say it once.
        self._say_once('crash', 'watchdog error (ignored): %s' %
                       traceback.format_exc().strip().splitlines()[-1])

  def _wait_for_tick(self):
    if self._wakeup is None:
      self._stop.wait(TICK_SECONDS)
      return
    ready, _, _ = select.select([self._wakeup[0]], [], [], TICK_SECONDS)
    if ready:
      self.signal_received()

  def signal_received(self):
    """SIGINT/SIGTERM's name if one arrived (either thread may ask)."""
    with self._lock:
      if self._wakeup is not None:
        try:
          numbers = os.read(self._wakeup[0], 64)
        except BlockingIOError:
          numbers = b''
        for number in numbers:
          if (number in (signal.SIGINT, signal.SIGTERM) and
              not self._signal_name):
            self._signal_name = signal.Signals(number).name
            self._signal_at = time.monotonic()
      return self._signal_name

  def _check(self, now):
    with self._lock:
      phase = self._phase
      doing, since = self._activity
    if self.signal_received():
      # Being stopped: the main thread gets a moment to stop by itself;
      # nothing else is worth reporting now.
      if now - self._signal_at >= SIGNAL_GRACE_SECONDS:
        self._end_interrupted(doing)
      return
    if phase == STARTING:
      timeout = self.params.startup_timeout
      bound = timeout + min(STARTUP_GRACE_SECONDS, max(3.0, timeout))
      if now - since > bound:
        self._end_stuck_at_start(doing, now - since)
      return
    if phase == TRAINING:
      self._watch_cluster(now)
    self._watch_for_stall(now, phase, doing, now - since)

  # Training: the board, the peers.

  def _watch_cluster(self, now):
    ok, value = self._reader.call(
        lambda: self._board.read(self._sess, BOARD_READ_SECONDS * 1000),
        BOARD_READ_SECONDS + 1)
    if ok:
      self._snapshot, self._board_error = value, None
      self._snapshot_at = now
      previous = self._last_completed or (None,) * len(value.completed)
      for i, count in enumerate(value.completed):
        if count != previous[i] or i not in self._client_changed:
          self._client_changed[i] = now
      if value.completed != self._last_completed:
        self._last_completed = value.completed
        self._last_progress = now
      self._check_notes(value)
    else:
      self._board_error = (failures.first_line(value)
                           if isinstance(value, Exception) else value)
    # Suspicion: the cluster is quiet, or one client is (in an
    # asynchronous cluster the others keep the cluster moving).
    suspect_after = self._suspect_after()
    quiet_client = any(
        now - changed >= suspect_after and not self._snapshot.left(i)
        for i, changed in self._client_changed.items()
        if i != self._own_index) if self._snapshot else False
    if not ok or quiet_client or now - self._last_progress >= suspect_after:
      self._check_peers(now)

  def _suspect_after(self):
    with self._lock:
      steps = list(self._step_seconds)
    typical = statistics.median(steps) if steps else 0.0
    return max(SUSPECT_AFTER_SECONDS, 3 * typical)

  def _check_notes(self, snapshot):
    if self._signal_name:
      return  # This task is being stopped itself; its own end says so.
    for i, note in enumerate(snapshot.notes):
      if i == self._own_index or not note or note.get('status') == 'ok':
        continue
      label = self._labels[i]
      status = note.get('status', 'failed')
      run_failure = failures.from_peer_note(label, status,
                                            note.get('failure'))
      if self.role.lockstep:
        # A stall or an unreachable peer ends every task the same way;
        # anything else is a failure of the run.
        self._end(*_PEER_ENDS.get(status, ('failed', exit_codes.RUN_FAILED)),
                  run_failure)
      self._carry_on_after(label, run_failure)

  def _probe_peers(self, now):
    if now - self._last_probe < TICK_SECONDS * 0.9:
      return self._probes
    self._last_probe = now
    probes = {}
    reasons = reachability.probe_all(self.peers, timeout=1.0)
    for label, address in sorted(self.peers.items()):
      reason = reasons[label]
      probes[label] = (address, reason)
      self._refusals.saw(label, reason)
      if reason is None:
        self._bad_since.pop(label, None)
      else:
        self._bad_since.setdefault(label, now)
    self._probes = probes
    return probes

  def _finished_normally(self, label):
    if self._snapshot is None or label not in self._labels:
      return False
    note = self._snapshot.notes[self._labels.index(label)]
    return bool(note) and note.get('status') == 'ok'

  def _check_peers(self, now):
    probes = self._probe_peers(now)
    for label in self._refusals.labels():
      if not self._refusals.gone(label) or self._finished_normally(label):
        continue
      address = self.peers[label]
      # Without a worker an asynchronous cluster trains on; without a ps
      # (or in lockstep) nobody can.
      if self.role.lockstep or label not in self._labels:
        self._end_for_lost_peer(label, probes)
      self._carry_on_after(label, failures.peer_gone(label, address))

  def _end_for_lost_peer(self, gone, probes):
    """A peer is gone (``gone``; None: maybe); ends with the peer lost
    *first*, if any.

    Behind a partition a peer cannot leave a note, and the tasks that
    notice it leave: the first peer this task lost, not the last, is the
    cause (e.g. a ps unreachable for seconds before a worker that gave up
    on it exits).
    """
    bad = [label for label in self._bad_since
           if label in probes and probes[label][1] and
           not self._finished_normally(label)]
    root = min(bad, key=lambda label: (self._bad_since[label], label),
               default=gone)
    if root is None:
      return
    address, reason = probes.get(root, (self.peers[root], None))
    if root == gone or reachability.is_gone(reason):
      self._end('failed', exit_codes.RUN_FAILED,
                failures.peer_gone(root, address))
    self._end('unreachable', exit_codes.UNREACHABLE,
              failures.peer_unreachable(root, address, reason))

  def _carry_on_after(self, label, run_failure):
    """Asynchronous training: say it once, record it, go on."""
    if ('peer', label) in self._said:
      return
    self._say_once(('peer', label), '%s; the other workers carry on '
                   '(asynchronous training).' % run_failure['message'])
    self._note_peer_failure(run_failure)

  # Stalls.

  def _watch_for_stall(self, now, phase, doing, doing_for):
    stall_timeout = self.params.stall_timeout
    if not stall_timeout:
      return
    quiet_for = (now - self._last_progress if phase == TRAINING
                 else doing_for)
    stalled = quiet_for >= stall_timeout or doing_for >= stall_timeout
    if not stalled:
      if self._stall_reported_at is not None:
        self._print(['Progress resumed after the stall report; carrying '
                     'on.'])
        self._stall_reported_at = None
      return
    action = stall_report.next_action(now, self._stall_reported_at,
                                      stall_timeout,
                                      self.params.stall_shutdown_timeout)
    if action == stall_report.REPORT:
      self._print(self._report(now, phase, quiet_for, doing, doing_for))
      self._stall_reported_at = now
    elif action == stall_report.END:
      self._end_stalled(phase, quiet_for, doing, doing_for)

  def _behind_labels(self):
    if self._snapshot is None:
      return []
    return [self._labels[i] for i in self._snapshot.behind()]

  def _peer_probes(self, now, phase):
    """Probes worth reporting: while training (once it has ended, peers
    leave normally)."""
    return self._probe_peers(now) if phase == TRAINING else {}

  def _report(self, now, phase, quiet_for, doing, doing_for):
    probes = self._peer_probes(now, phase)
    shutdown = self.params.stall_shutdown_timeout
    return stall_report.report(
        self.role.task_name, quiet_for, self.params.stall_timeout,
        self._snapshot, self._labels, probes, self._board_error,
        stall_report.waiting_for(self.role, doing, self._behind_labels()),
        doing_for, shutdown if shutdown else None,
        now - self._snapshot_at if self._snapshot_at else 0.0)

  def _end_stalled(self, phase, quiet_for, doing, doing_for):
    # A peer this task cannot reach explains the stall.
    self._end_for_lost_peer(None, self._peer_probes(time.monotonic(), phase))
    task = stall_report.culprit(self.role.task_name, self._snapshot,
                                self._labels)
    waiting = stall_report.waiting_for(self.role, doing,
                                       self._behind_labels())
    if task == self.role.task_name:
      what = '%s is stuck: %s, for %.0f s' % (task, waiting, doing_for)
    else:
      what = ('%s is stuck and the others wait for it (%s: %s)'
              % (task, self.role.task_name, waiting))
    self._end('stalled', exit_codes.STALLED, failures.failure(
        'Stalled', 'no step completed in the cluster for %.0f s; %s.'
        % (quiet_for, what), task,
        'Look at %s\'s output and state (e.g. py-spy dump, or its stall '
        'report); raise --stall_timeout if its steps are just slow.' % task))

  # Other ends.

  def _end_interrupted(self, doing):
    run_failure = failures.failure(
        'Interrupted', 'stopped by %s while %s (TensorFlow did not return; '
        'ended by the watchdog)' % (self._signal_name, doing))
    self._end('interrupted', exit_codes.INTERRUPTED, run_failure,
              ['Interrupted: %s. Partial results were recorded.'
               % run_failure['message']])

  def _end_stuck_at_start(self, doing, doing_for):
    probes = self._probe_peers(time.monotonic())
    missing = stall_report.unreachable_peers(probes)
    if not missing and doing.startswith(CREATING_SESSION):
      # Every port answers, yet TensorFlow still waits for a response: a
      # peer that accepts connections but is not (or no longer) a working
      # TensorFlow server.
      missing = [(label, address, 'accepts connections but never answered '
                  'TensorFlow\'s session creation')
                 for label, address in sorted(self.session_peers.items())]
    if missing:
      label, address, reason = missing[0]
      run_failure = failures.failure(
          'PeerUnreachable',
          'start-up waited %.0f s while %s (--startup_timeout=%g); '
          'unreachable: %s.' % (
              doing_for, doing, self.params.startup_timeout, ', '.join(
                  reachability.describe(*m) for m in missing)), label,
          'Start the missing tasks, or check the addresses and that this '
          'host can reach them.')
      self._end('unreachable', exit_codes.UNREACHABLE, run_failure)
    self._end('stalled', exit_codes.STALLED, failures.failure(
        'Stalled', 'start-up waited %.0f s while %s (--startup_timeout=%g); '
        'every peer answers.' % (doing_for, doing,
                                 self.params.startup_timeout),
        self.role.task_name))

  def _end(self, status, code, run_failure, lines=None):
    signalled = self.signal_received()
    if signalled and status != 'interrupted':
      # The launcher stops every task at once: what this task saw after
      # the signal (e.g. its ps gone) is a consequence of the stop.
      run_failure = failures.failure('Interrupted', 'stopped by %s (then: %s)'
                                     % (signalled, run_failure['message']))
      status, code, lines = 'interrupted', exit_codes.INTERRUPTED, None
    if lines is None:
      lines = failures.report_lines(run_failure, status)
    self._end_run(status, code, run_failure, lines)
    # Still here: the main thread ended the run first. Nothing to watch.
    raise _Ended()
