"""How a run ends when the watchdog ends it: status, exit code, failure.

One rule holds for every ending: once SIGINT/SIGTERM has arrived, whatever
the run saw next (a peer gone, a failed step, a stall) is a consequence of
the stop, so the run ends as interrupted (``after_signal``). A cluster
task's failure path applies the same rule to its exception
(``interrupted_by``).
"""

import dataclasses

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import failures

FAILED, STALLED, UNREACHABLE, INTERRUPTED = (
    'failed', 'stalled', 'unreachable', 'interrupted')
_CODES = {FAILED: exit_codes.RUN_FAILED, STALLED: exit_codes.STALLED,
          UNREACHABLE: exit_codes.UNREACHABLE,
          INTERRUPTED: exit_codes.INTERRUPTED}


@dataclasses.dataclass(frozen=True)
class Ending:
  status: str
  failure: dict

  @property
  def exit_code(self):
    return _CODES[self.status]

  def report_lines(self):
    return failures.report_lines(self.failure, self.status)

  def after_signal(self, signal_name):
    """This ending as it reads when ``signal_name`` (if any) came first."""
    if not signal_name or self.status == INTERRUPTED:
      return self
    return Ending(INTERRUPTED, interrupted_by(signal_name,
                                             self.failure['message']))


def interrupted_by(signal_name, what_followed):
  """The failure of a run stopped by ``signal_name``; ``what_followed``
  is what it then saw."""
  return failures.failure('Interrupted', 'stopped by %s (then: %s)' % (
      signal_name, what_followed))


def after_peer_left(status):
  """How a synchronous cluster task ends when a peer left with
  ``status``: a stall or an unreachable peer ends every task the same way;
  anything else is a failure of the run."""
  return status if status in (STALLED, UNREACHABLE) else FAILED
