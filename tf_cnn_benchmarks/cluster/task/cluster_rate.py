"""The cluster's rate, from the global step, and each worker's own rate.

The chief reads the global step when timing starts and when it ends; the
steps between, times the images one step stands for, over the timed wall
time, is what the whole cluster trained. Every worker also says its own
rate (the launcher sums them).
"""

from tf_cnn_benchmarks.cluster import deadlines
from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.config import run_mode


class ClusterRate:

  def __init__(self, role, mode, read_step, images_per_global_step):
    """``read_step(stepper)``: the global step now, read through the
    session (graph engine) or the trainer (tf2); None: the run has none."""
    self.role = role
    # Without training the global step stands still: no cluster rate.
    # (--eval runs in a single process only.)
    self._counts = (role.is_chief and read_step is not None and
                    mode is not run_mode.RunMode.FORWARD_ONLY)
    self._read_step = read_step
    self.images_per_global_step = images_per_global_step
    self._step_at_start = None

  @classmethod
  def of_graph(cls, role, mode, global_step, images_per_global_step):
    """The graph engine's: its global step read by a bounded session.run."""
    def read_step(sess):
      return int(sess.run(global_step, options=deadlines.bounded(
          deadlines.RPC_TIMEOUT_MS)))
    return cls(role, mode, read_step if global_step is not None else None,
               images_per_global_step)

  def timing_starts(self, stepper):
    if self._counts:
      self._step_at_start = self._read_step(stepper)

  def report(self, stepper, reporter, times):
    """Lines after the total: this worker's own rate, the chief's total."""
    if self.role.job_name == roles.WORKER:
      reporter.say('%s images/sec: %.2f (this worker alone; the total '
                    'above is %d workers x this rate)' % (
                        self.role.task_name, times.total_images_per_sec(1),
                        self.role.num_workers))
    if self._step_at_start is None or not times.timed_wall_time:
      return
    steps = self._read_step(stepper) - self._step_at_start
    rate = steps * self.images_per_global_step / times.timed_wall_time
    reporter.say('cluster images/sec: %.2f (from the global step: %d '
                  'steps x %d images in %.2f s)' % (
                      rate, steps, self.images_per_global_step,
                      times.timed_wall_time))
