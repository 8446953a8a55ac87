"""The cluster's rate, from the global step, and each worker's own rate.

The chief reads the global step when timing starts and when it ends; the
steps between, times the images one step stands for, over the timed wall
time, is what the whole cluster trained. Every worker also says its own
rate (the launcher sums them).
"""

from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster import roles


class ClusterRate:

  def __init__(self, role, params, read_step, images_per_global_step):
    """``read_step(sess)``: the global step now (None: the run has none)."""
    self.role = role
    # Without training the global step stands still: no cluster rate.
    # (--eval runs in a single process only.)
    self._counts = (role.is_chief and read_step is not None and
                    not params.forward_only)
    self._read_step = read_step
    self.images_per_global_step = images_per_global_step
    self._step_at_start = None

  @classmethod
  def of_graph(cls, role, params, global_step, images_per_global_step):
    """The graph engine's: its global step read by a bounded session.run."""
    def read_step(sess):
      return int(sess.run(global_step, options=deadlines.bounded(
          deadlines.RPC_TIMEOUT_MS)))
    return cls(role, params, read_step if global_step is not None else None,
               images_per_global_step)

  def timing_starts(self, sess):
    if self._counts:
      self._step_at_start = self._read_step(sess)

  def report(self, sess, reporter, times):
    """Lines after the total: this worker's own rate, the chief's total."""
    if self.role.job_name == roles.WORKER:
      reporter.line('%s images/sec: %.2f (this worker alone; the total '
                    'above is %d workers x this rate)' % (
                        self.role.task_name, times.total_images_per_sec(1),
                        self.role.num_workers))
    if self._step_at_start is None or not times.timed_wall_time:
      return
    steps = self._read_step(sess) - self._step_at_start
    rate = steps * self.images_per_global_step / times.timed_wall_time
    reporter.line('cluster images/sec: %.2f (from the global step: %d '
                  'steps x %d images in %.2f s)' % (
                      rate, steps, self.images_per_global_step,
                      times.timed_wall_time))
