"""A task's port held open by a plain socket until TensorFlow's server takes
it, so peers can tell it started before its server exists.

MultiWorkerMirroredStrategy starts this task's server and waits for every
worker to register in one TensorFlow call, which holds the interpreter:
no Python thread runs, so a SIGTERM then is not acted on until the
registration barrier times out (--startup_timeout; the chaos soak's
`sigterm_startup` trials of the tf2 engine). The wait for the others is
therefore done first, in Python, where a signal ends it within its bound:
each worker listens on its own port (``held``), waits until every other
worker's port accepts (its placeholder or, once that worker went on, its
server), then lets go and starts the strategy, whose barrier the others
reach within moments.

The placeholder never accepts: a probe's connection completes in the
kernel's backlog and is reset when the placeholder closes, so it leaves
no TIME_WAIT that could stop TensorFlow binding the port.
"""

import contextlib
import socket


@contextlib.contextmanager
def held(port):
  """Listens on ``port`` (every interface, as TensorFlow's server will)
  for the duration. A port already taken is left alone: TensorFlow's own
  bind then fails with its own error."""
  listener = None
  try:
    listener = _listen(port)
  except OSError:
    pass
  try:
    yield
  finally:
    if listener is not None:
      listener.close()


def _listen(port):
  if socket.has_dualstack_ipv6():
    return socket.create_server(('', port), family=socket.AF_INET6,
                                dualstack_ipv6=True, backlog=64)
  return socket.create_server(('', port), backlog=64)
