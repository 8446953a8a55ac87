"""The launcher's child processes as process groups: their environment, their
tie to the launcher's life, and how a group is stopped.

Both ends of the launcher use these: task_processes.py for the tasks it
starts itself, ssh_remote.py for the task a remote host's guard starts.
"""

import ctypes
import os
import signal

import tf_cnn_benchmarks
from tf_cnn_benchmarks.config import tf_config
from tf_cnn_benchmarks.liveness import watchdog

# SIGTERM, then this long (the task's own bound to end and record it),
# then SIGKILL.
KILL_GRACE_SECONDS = watchdog.SIGNALLED_EXIT_SECONDS


def die_with_parent():
  """Runs in the child before exec: SIGKILL it when the launcher dies."""
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
  except (OSError, AttributeError):
    pass


def child_env():
  env = dict(os.environ)
  # The task imports this package even when it is not installed.
  env['PYTHONPATH'] = os.pathsep.join(
      [tf_cnn_benchmarks.REPO_ROOT] + [p for p in env.get(
          'PYTHONPATH', '').split(os.pathsep) if p])
  env['PYTHONUNBUFFERED'] = '1'
  # Each task gets its place from the launcher's flags; a TF_CONFIG the
  # user exported (for another tool) would contradict them.
  env.pop(tf_config.ENV, None)
  return env


def kill_group(pid, sig):
  try:
    os.killpg(pid, sig)
  except (ProcessLookupError, PermissionError):
    pass
