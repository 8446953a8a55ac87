"""TEST ONLY: faults the cluster tests inject into one task.

Read from one environment variable, which no user sets by accident:

  TF_CNN_BENCHMARKS_TEST_FAULT=<kind>:<task>:step<N>

  stall:worker1:step5   worker1 blocks before its step 5, forever (as a
                        hung step would): tests stall detection;
  oom:worker1:step5     worker1's step 5 raises a real
                        tf.errors.ResourceExhaustedError, as an
                        out-of-memory allocation would: tests that the
                        others report it as the root cause.

Only the task named is affected; every other task ignores the variable.
Nothing but runtime.ClusterRuntime.run_step consults this module.
"""

import dataclasses
import os
import re
import time
from typing import Optional

ENV = 'TF_CNN_BENCHMARKS_TEST_FAULT'
KINDS = ('stall', 'oom')
_SPEC = re.compile(r'^(%s):(\w+?\d+):step(\d+)$' % '|'.join(KINDS))


@dataclasses.dataclass(frozen=True)
class Fault:
  kind: str
  task: str
  step: int

  def describe(self):
    return 'injected by %s=%s:%s:step%d (test only)' % (
        ENV, self.kind, self.task, self.step)


def planned_for(task_name, environ=None) -> Optional[Fault]:
  """The fault planned for ``task_name``, or None."""
  spec = (environ if environ is not None else os.environ).get(ENV, '')
  if not spec:
    return None
  match = _SPEC.match(spec.strip())
  if not match:
    raise ValueError('%s=%r: expected <kind>:<task>:step<N> with kind one '
                     'of %s' % (ENV, spec, ', '.join(KINDS)))
  fault = Fault(match.group(1), match.group(2), int(match.group(3)))
  return fault if fault.task == task_name else None


def before_step(fault, step, say):
  """Applies ``fault`` before step ``step`` (1-based) if it is due.

  ``say(text)`` tells the watchdog what this task is doing, so its stall
  report names the injected stall.
  """
  if fault is None or step != fault.step:
    return
  if fault.kind == 'stall':
    say('held before step %d (%s)' % (step, fault.describe()))
    while True:  # Until the watchdog ends the process.
      time.sleep(3600)
  if fault.kind == 'oom':
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    raise tf.errors.ResourceExhaustedError(
        None, None,
        'OOM when allocating tensor with shape[4096,4096,64] and type float '
        'on %s by allocator cpu (%s)' % (fault.task, fault.describe()))
