"""How a cluster task's run ends: the shared endings, and a peer's.

Every way a run ends from its watchdog is a liveness/endings.py Ending
(status, exit code, failure; a signal first makes any ending
"interrupted"); cluster modules take those names from here, with the one
rule only a cluster has: how a task ends after a peer left.
"""

from tf_cnn_benchmarks.liveness.endings import Ending  # pylint: disable=unused-import
from tf_cnn_benchmarks.liveness.endings import FAILED
from tf_cnn_benchmarks.liveness.endings import INTERRUPTED  # pylint: disable=unused-import
from tf_cnn_benchmarks.liveness.endings import interrupted_by  # pylint: disable=unused-import
from tf_cnn_benchmarks.liveness.endings import STALLED
from tf_cnn_benchmarks.liveness.endings import UNREACHABLE


def after_peer_left(status):
  """How a synchronous task ends when a peer left with ``status``: a stall
  or an unreachable peer ends every task the same way; anything else is a
  failure of the run."""
  return status if status in (STALLED, UNREACHABLE) else FAILED
