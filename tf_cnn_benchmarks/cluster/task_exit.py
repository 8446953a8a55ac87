"""The one way a cluster task ends while its main thread is stuck.

The watchdog calls ``end`` when the run must end and the main thread sits
inside a TensorFlow call that may never return. It records the run with
what happened, prints the ending, leaves this task's note on the progress
board and tells the serving tasks it is done (together bounded by
LEAVING_SECONDS: the peers may be gone), then leaves with os._exit, past
the blocked call. If the main thread has already recorded the run, the run
has ended there and ``end`` returns without doing anything.
"""

import os
import sys
import threading

# Leaving in a hurry: the note and the done signals get this long together.
LEAVING_SECONDS = 5.0


class TaskExit:

  def __init__(self):
    self._record = None   # write_record(status, exit_code, failure) -> bool
    self._record_path = None  # () -> path of the written record, or None
    self._leave = None    # leave(status, failure): note + done signals

  def attach_run(self, write_record, record_path):
    self._record, self._record_path = write_record, record_path

  def attach_session(self, leave):
    self._leave = leave

  def end(self, ending):
    """Ends the process with ``ending`` (endings.Ending); returns only if
    the main thread recorded the run first."""
    if self._record is not None and not self._record(
        ending.status, ending.exit_code, ending.failure):
      return
    for line in ending.report_lines():
      print(line)
    path = self._record_path() if self._record_path else None
    if path:
      print('Run record: %s' % path)
    sys.stdout.flush()
    if self._leave is not None:
      leaving = threading.Thread(
          target=self._leave, args=(ending.status, ending.failure),
          daemon=True)
      leaving.start()
      leaving.join(LEAVING_SECONDS)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(ending.exit_code)  # pylint: disable=protected-access
