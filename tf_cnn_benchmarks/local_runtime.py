"""How a single-process run opens its session, initialises and runs steps.

The driver does all of this through a runtime object, so that it never
needs to know whether it runs alone or as a task of a cluster. This is the
single-process one: a plain session, nothing to wait for. A cluster task's
runtime (cluster/runtime.py) has the same methods and adds the start
protocol, the progress board, the watchdog and its way out.
"""

import contextlib

import tensorflow as tf

tf1 = tf.compat.v1


class LocalRuntime:

  is_chief = True  # the only task: it writes checkpoints

  def wire_graph(self, variable_manager, global_step, step_op):
    """The step op the session runs (a cluster adds its own parts)."""
    del variable_manager, global_step
    return step_op

  def attach_run(self, rc, result, write_record):
    """What the runtime may need to end the run by itself (nothing here)."""
    del rc, result, write_record

  def open_session(self, graph, config):
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
    return sess.run(fetches, options=options)

  def doing(self, text):
    """The main thread is doing ``text`` (a cluster's watchdog reads it)."""
    del text
    return contextlib.nullcontext()

  def timing_starts(self, sess):
    del sess

  def report(self, sess, reporter, times):
    """Lines after the total (a cluster adds its rates)."""
    del sess, reporter, times

  def task_file_path(self, path):
    """Where this process writes a per-run file (--trace_file, ...)."""
    return path
