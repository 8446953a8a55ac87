"""The one way a run ends while its main thread is stuck.

The watchdog calls ``end`` when the run must end and the main thread sits
inside a call that may never return (a TensorFlow step, a blocked read).
It records the run with what happened, prints the ending, lets the runtime
leave word for its peers (a cluster task: its note on the progress board
and "done" to the serving tasks; together bounded by LEAVING_SECONDS, the
peers may be gone), then leaves with os._exit, past the blocked call. If
the main thread has already recorded the run, the run has ended there and
``end`` returns without doing anything, unless told to leave anyway (a
second signal: the user insists).
"""

import os
import threading

from tf_cnn_benchmarks.liveness import console

# Leaving in a hurry: the runtime's words to its peers get this long.
LEAVING_SECONDS = 5.0


class RunExit:

  def __init__(self, write_record, record_path, say):
    """``write_record(status, exit_code, failure)`` records the run once
    and returns False when it was recorded already; ``record_path()`` is
    where it went (or None); ``say(line)`` prints."""
    self._record = write_record
    self._record_path = record_path
    self._say = say
    self._leave = None    # leave(status, failure): a cluster's goodbyes
    # What must not outlive the process by its files (the --train_dir
    # lock's holder name), undone just before os._exit, which skips every
    # finally and atexit.
    self._before_exit = []

  def attach_leave(self, leave):
    self._leave = leave

  def before_exit(self, undo):
    """``undo()`` runs just before the process leaves from here."""
    self._before_exit.append(undo)

  def end(self, ending, anyway=False):
    """Ends the process with ``ending`` (endings.Ending); returns only if
    the main thread recorded the run first and not ``anyway``."""
    # Nothing here may raise past os._exit: this runs on the watchdog's
    # thread while the main thread is stuck, so a raise would leave the
    # run hung for ever, deaf to further signals. A record that cannot be
    # written is said by write_record itself (record.write_or_say); this
    # catches the rest.
    try:
      recorded = self._record(ending.status, ending.exit_code,
                              ending.failure)
    except Exception as e:  # pylint: disable=broad-except
      self._say('Could not write the run record: %s' % e)
      recorded = True
    if not recorded and not anyway:
      return
    try:
      if recorded:
        for line in ending.report_lines():
          self._say(line)
        path = self._record_path()
        if path:
          self._say('Run record: %s' % path)
        if self._leave is not None:
          leaving = threading.Thread(
              target=self._leave, args=(ending.status, ending.failure),
              daemon=True)
          leaving.start()
          leaving.join(LEAVING_SECONDS)
      for undo in self._before_exit:
        try:
          undo()
        except Exception as e:  # pylint: disable=broad-except
          self._say('Could not undo %s on the way out: %s' % (
              getattr(undo, '__qualname__', undo), e))
      console.flush()
    finally:
      os._exit(ending.exit_code)  # pylint: disable=protected-access
