"""How a single-process run opens its session, initialises and runs steps.

The driver does all of this through a runtime object, so that it never
needs to know whether it runs alone or as a task of a cluster. This is the
single-process one: a plain session, nothing to wait for, and the run's
watchdog (liveness/) watching for a stall. A cluster task's runtime
(cluster/task/runtime.py) has the same methods and adds its server, the start
protocol, the progress board and the cluster's checks.
"""

import contextlib

import tensorflow as tf

from tf_cnn_benchmarks.liveness import local_stall

tf1 = tf.compat.v1


class LocalRuntime:

  is_chief = True  # the only task: it writes checkpoints

  def __init__(self):
    self._watch = self._params = None

  def begin(self, rc, run_watch):
    """Nothing to start: returns rc (as it is)."""
    self._watch, self._params = run_watch, rc.params
    return rc

  def running(self):
    """Around the rest of the run, from just after ``begin``: nothing to
    do on the way out here."""
    return contextlib.nullcontext()

  def wire_graph(self, variable_manager, global_step, step_op):
    """The step op the session runs (a cluster adds its own parts)."""
    del variable_manager, global_step
    return step_op

  def attach_run(self, rc, result):
    """What the runtime may need once the graph is built (nothing here)."""
    del rc, result

  def watch_for_stalls(self):
    """From now on the watchdog watches for a stall (what comes before is
    Python's, which a signal can always stop): from the session on, or
    around the tf2 engine's build and steps (function_steps)."""
    stall = local_stall.LocalStall(self._params, self._watch.activity,
                                   self._watch.say)
    self._watch.watch_with(stall.check)

  def open_session(self, graph, config):
    """The session, watched for stalls (watch_for_stalls)."""
    self.watch_for_stalls()
    with self._watch.phase('session'):
      return tf1.Session(graph=graph, config=config)

  def initialize(self, sess, built, restore):
    sess.run(built.init_ops)
    sess.run(built.input_init_ops)
    restore()
    # Replicated copies are made equal after a restore too (restore sets
    # only copy 0).
    sess.run(built.post_init_ops)

  def step_run_options(self):
    """RunOptions of every step (None: TensorFlow's defaults)."""
    return None

  def run_step(self, sess, fetches, options):
    return self.run_function_step(
        lambda: sess.run(fetches, options=options))

  def untimed_step_feed(self):
    return None

  def run_function_step(self, run):
    """One step, ``run()`` (a session.run, or the tf2 engine's step),
    watched: named by its phase (a warm-up step, the timed steps) and
    timed afresh, so that a stall counts from the step's start."""
    with self._watch.doing(None, step=True):
      return run()

  @contextlib.contextmanager
  def function_steps(self):
    """Around the tf2 engine's build and steps (it opens no session):
    watched for stalls (a build stuck inside TensorFlow too)."""
    self.watch_for_stalls()
    yield

  def doing(self, text):
    """The main thread is doing ``text`` (stall reports say so)."""
    if self._watch is None:
      return contextlib.nullcontext()
    return self._watch.doing(text)

  def timing_starts(self, stepper):
    del stepper

  def report(self, stepper, reporter, times):
    """Lines after the total (a cluster adds its rates)."""
    del stepper, reporter, times

  def task_file_path(self, path):
    """Where this process writes a per-run file (--trace_file, ...)."""
    return path
