"""TEST ONLY: faults the cluster tests inject into one task.

Read from one environment variable, which no user sets by accident:

  TF_CNN_BENCHMARKS_TEST_FAULT=<kind>:<task>:step<N>[:x<F>]

  stall:worker1:step5   worker1 blocks before its step 5, forever (as a
                        hung step would): tests stall detection;
  oom:worker1:step5     worker1's step 5 raises a real
                        tf.errors.ResourceExhaustedError, as an
                        out-of-memory allocation would: tests that the
                        others report it as the root cause;
  slow:worker2:step1:x3 from its step 1 on, worker2 sleeps before each
                        step so that its steps take 3x as long as its
                        own session.run (a straggler: alive, slow, in
                        every synchronous step). F defaults to 3;
  slow_compute:worker2:step1:x3
                        the same slowness INSIDE the step: an op of
                        worker2's step graph, after its gradients are
                        computed and before it hands them over, sleeps
                        (F - 1) x the time the run took to get there, so
                        worker2 computes 3x slower (a slower machine);
  lag:worker1:step1:x2  from its step 1 on, worker1 sleeps 2 s (F
                        seconds, not a factor) before each step: it enters
                        every step after the others have done its work
                        (orders the workers' updates in a test of
                        --sync_updates=barrier);
  slow_check:worker1:step5:x20
                        from its step 5 on, worker1's watchdog check takes
                        20 s (F seconds) once, as a check blocked in a name
                        lookup or a board read would: tests that a signal
                        ends the task within its bound whatever the
                        watchdog is doing (liveness/watchdog.py);
  refused_copy:worker1:step5:x2
                        worker1's step 5 runs, then raises the real
                        tf.errors.AbortedError a task answers to a request
                        whose id it already has (TensorFlow's repeated
                        random ids: cluster/task/step_repeats.py);
                        F attempts of the step in a row (default 1).
  freeze:worker0:step5  worker0 stops itself (SIGSTOP) right after its
                        step 5 ran: frozen between two steps, where its
                        peers' next call is a board write to it, not a
                        step (a frozen host, at the moment the soak's
                        seed 7138 hit);
  late_join:worker1:step0:x20
                        tf2 (MultiWorkerMirroredStrategy): worker1 waits
                        F seconds after its wait for the other workers'
                        ports, its own port still held, before it joins:
                        the others sit that long in TensorFlow's
                        registration barrier, which holds the interpreter
                        (N is not read).

Only the task named is affected; every other task ignores the variable.
Nothing but runtime.ClusterRuntime (its wire_graph, the step it counts, and
the tf2 runtime's join) uses a Fault, and it gets one only through
test_hooks.planned_fault, which loads this module only when the variable is
set.
"""

import dataclasses
import os
import re
import signal
import time
from typing import Optional

from tf_cnn_benchmarks.test_hooks import variables

ENV = variables.FAULT_ENV
KINDS = ('stall', 'oom', 'slow', 'slow_compute', 'lag', 'refused_copy',
         'slow_check', 'late_join', 'freeze')
_SPEC = re.compile(r'^(%s):(\w+?\d+):step(\d+)(?::x([0-9.]+))?$' %
                   '|'.join(KINDS))


# Kinds whose spec has an :x<F> part, and F when it has none.
_WITH_FACTOR = ('slow', 'slow_compute', 'lag', 'refused_copy', 'slow_check',
                'late_join')
_DEFAULT_FACTOR = {'refused_copy': 1.0}


@dataclasses.dataclass(frozen=True)
class Fault:
  kind: str
  task: str
  step: int
  factor: float = 3.0

  def describe(self):
    return 'injected by %s=%s:%s:step%d%s (test only)' % (
        ENV, self.kind, self.task, self.step,
        ':x%g' % self.factor if self.kind in _WITH_FACTOR else '')

  def before_step(self, step, rename_activity):
    """Applies this fault before step ``step`` (1-based) if it is due.

    ``rename_activity(text)`` tells the watchdog what this task is doing, so
    its stall report names the injected stall.
    """
    if self.kind == 'slow' and step >= self.step:
      _slow_down(self, step)
    if self.kind == 'lag' and step >= self.step:
      time.sleep(self.factor)
    if self.kind == 'slow_check' and step >= self.step:
      _slow_check['due'] = True
    if self.kind == 'slow_compute':
      # Read by the step's own pause op (in_step_graph).
      _compute['began'] = time.monotonic() if step >= self.step else None
    if step != self.step:
      return
    if self.kind == 'stall':
      rename_activity('held before step %d (%s)' % (step, self.describe()))
      while True:  # Until the watchdog ends the process.
        time.sleep(3600)
    if self.kind == 'oom':
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      raise tf.errors.ResourceExhaustedError(
          None, None,
          'OOM when allocating tensor with shape[4096,4096,64] and type '
          'float on %s by allocator cpu (%s)' % (self.task, self.describe()))

  def before_join(self, say):
    """A late_join: says so, then waits its F seconds."""
    if self.kind == 'late_join':
      say('Joining %g s late (%s).' % (self.factor, self.describe()))
      time.sleep(self.factor)

  def after_step(self, step):
    """Applies this fault after an attempt of step ``step`` ran, if due: a
    refused_copy refuses the first F attempts of its step; a freeze stops
    the process."""
    if self.kind == 'freeze' and step == self.step:
      os.kill(os.getpid(), signal.SIGSTOP)
    if self.kind != 'refused_copy' or step != self.step:
      return
    _refused['count'] += 1
    if _refused['count'] > self.factor:
      return
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    # TensorFlow's words (distributed_runtime/recent_request_ids.cc), as a
    # step's error carries them from the peer.
    raise tf.errors.AbortedError(
        None, None,
        'From /job:ps/replica:0/task:0:\nThe same RunGraph (Worker) request '
        'was received twice. graph_handle: "000000000000001a" step_id: %d '
        '(%s)' % (step, self.describe()))

  def around_check(self, check):
    """The watchdog's ``check(now)``, slowed once by a due slow_check (in
    the watchdog's own call, as a slow lookup would); else ``check``."""
    if self.kind != 'slow_check':
      return check

    def slowed(now):
      if _slow_check['due'] and not _slow_check['slept']:
        _slow_check['slept'] = True
        time.sleep(self.factor)
      return check(now)
    return slowed

  def in_step_graph(self, handed_over, device):
    """Builds a slow_compute fault into this task's step graph: a pause op
    on ``device`` after everything the ``handed_over`` ops (the step's
    hand-over of its gradients, from the variable manager) consume, and
    before them, so the pause is part of the worker's compute. No-op for
    every other fault."""
    if self.kind != 'slow_compute':
      return
    if not handed_over:
      raise ValueError(
          '%s: slow_compute needs a step that hands its gradients over '
          'before waiting for the other workers (synchronous '
          'parameter_server or distributed_replicated); use slow in the '
          'other modes.' % self.describe())
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    def pause():
      # (F - 1) x the time this run took to compute its gradients.
      began = _compute['began']
      slept = 0.0 if began is None else (self.factor - 1) * (
          time.monotonic() - began)
      time.sleep(slept)
      return slept

    computed = [t.op for op in handed_over for t in op.inputs]
    with tf.compat.v1.device(device), tf.control_dependencies(computed):
      paused = tf.py_function(pause, [], tf.float64, name='test_fault_pause')
    for op in handed_over:
      # The gradients exist before this is built; a control input is the
      # one way to put the pause between them and their hand-over.
      op._add_control_input(paused.op)  # pylint: disable=protected-access


def planned_for(task_name, environ=None) -> Optional[Fault]:
  """The fault planned for ``task_name``, or None."""
  spec = (environ if environ is not None else os.environ).get(ENV, '')
  if not spec:
    return None
  match = _SPEC.match(spec.strip())
  if not match:
    raise ValueError('%s=%r: expected <kind>:<task>:step<N>[:x<F>] with '
                     'kind one of %s' % (ENV, spec, ', '.join(KINDS)))
  kind = match.group(1)
  fault = Fault(kind, match.group(2), int(match.group(3)),
                float(match.group(4) or _DEFAULT_FACTOR.get(kind, 3.0)))
  return fault if fault.task == task_name else None


# refused_copy: attempts of the fault's step so far.
_refused = {'count': 0}
# slow: when the previous step began, and how long this task slept then.
_previous_step = {}
# slow_compute: when the current step's run began (None: not slowed).
_compute = {'began': None}
# slow_check: its step was reached; its one slow check was made.
_slow_check = {'due': False, 'slept': False}


def _slow_down(fault, step):
  """Sleeps (F - 1) x the previous step's own time: the time since it began
  less the sleep before it (the session.run and the loop around it)."""
  now = time.monotonic()
  began, slept = _previous_step.get('began'), _previous_step.get('slept', 0)
  own = (now - began - slept) if began is not None and step > 1 else 0.0
  pause = max(0.0, (fault.factor - 1) * own)
  time.sleep(pause)
  _previous_step.update(began=now, slept=pause)
