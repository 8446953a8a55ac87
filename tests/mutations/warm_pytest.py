"""A pytest starter with TensorFlow already loaded: one per tree copy.

  started by check.py in a tree copy (cwd and PYTHONPATH: the copy)

Why: a guard's own pytest process spent ~6 s of a 2-core host's CPU
loading TensorFlow and pytest before its first test (8-10 s of a typical
breakage's 10-16 s), once per breakage. This process pays that once, then
forks a child per breakage. The fork is safe: after `import tensorflow` the
only other thread is numpy's OpenBLAS pool, which re-makes itself in a
child (TensorFlow starts its own threads with the first session, in the
child).

Each child forgets every module loaded from the copy (the conftest, the
harness), so the breakage applied since is what the guards import, and
starts its own session (the check kills it and what it started as one
group).

Protocol, one line each way per breakage:
  stdin:  JSON {"args": [pytest arguments], "log": path for its output}
  stdout: "pid N" when the child starts, then "exit CODE" when it ends
          (CODE: the child's exit status, or -SIGNAL).
End of stdin ends the server.
"""

import json
import os
import sys

TREE = os.getcwd()

# What a guard's pytest process would load first: pytest, and the copy's
# test settings with TensorFlow as its conftest loads it (a tree without
# one, like test_check.py's, gets pytest alone).
import pytest  # pylint: disable=g-import-not-at-top,wrong-import-position,unused-import
if os.path.exists(os.path.join(TREE, 'tests', 'conftest.py')):
  import tests.conftest  # pylint: disable=g-import-not-at-top,wrong-import-position,unused-import


def _forget_the_copys_modules():
  """Drops every module loaded from the tree copy, so that the next import
  reads the files as they are now (with the breakage applied)."""
  prefix = os.path.join(TREE, '')
  for name, module in list(sys.modules.items()):
    path = getattr(module, '__file__', None) or ''
    if os.path.abspath(path).startswith(prefix):
      del sys.modules[name]


def _child(args, log):
  os.setsid()
  null = os.open(os.devnull, os.O_RDONLY)
  os.dup2(null, 0)
  os.close(null)
  fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
  os.dup2(fd, 1)
  os.dup2(fd, 2)
  os.close(fd)
  code = 3
  try:
    _forget_the_copys_modules()
    code = int(pytest.main(args))
  finally:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # pylint: disable=protected-access


def main():
  for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
      _child(request['args'], request['log'])
    print('pid %d' % pid, flush=True)
    _, status = os.waitpid(pid, 0)
    code = (os.WEXITSTATUS(status) if os.WIFEXITED(status)
            else -os.WTERMSIG(status))
    print('exit %d' % code, flush=True)


if __name__ == '__main__':
  main()
