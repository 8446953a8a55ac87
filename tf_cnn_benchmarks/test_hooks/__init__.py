"""TEST ONLY: slowdowns and faults that only tests switch on.

Each hook is switched on by an environment variable no user sets by
accident. This module is the switch, and the only part of the package that
product code imports: it loads a hook's module only when that hook's
variable is set, so a user's run never loads test code
(tests/test_architecture.py checks both).
"""

import os

from tf_cnn_benchmarks.test_hooks.variables import FAULT_ENV
from tf_cnn_benchmarks.test_hooks.variables import SLOWDOWN_ENV


def _switched_on(name):
  return bool(os.environ.get(name, '').strip())


def check_slowdown():
  """Raises UsageError for a slowdown that is set but not a fraction."""
  if _switched_on(SLOWDOWN_ENV):
    from tf_cnn_benchmarks.test_hooks import injected_slowdown  # pylint: disable=g-import-not-at-top
    injected_slowdown.from_environment()


def recorded_slowdown():
  """What a run record says (`injected_slowdown`): None for a real run."""
  if not _switched_on(SLOWDOWN_ENV):
    return None
  from tf_cnn_benchmarks.test_hooks import injected_slowdown  # pylint: disable=g-import-not-at-top
  return injected_slowdown.recorded_value()


def slowdown_pause():
  """The pause after each timed step (injected_slowdown.Pause), or None."""
  if not _switched_on(SLOWDOWN_ENV):
    return None
  from tf_cnn_benchmarks.test_hooks import injected_slowdown  # pylint: disable=g-import-not-at-top
  return injected_slowdown.Pause(injected_slowdown.from_environment())


def planned_fault(task_name):
  """The fault_injection.Fault planned for this cluster task, or None."""
  if not _switched_on(FAULT_ENV):
    return None
  from tf_cnn_benchmarks.test_hooks import fault_injection  # pylint: disable=g-import-not-at-top
  return fault_injection.planned_for(task_name)
