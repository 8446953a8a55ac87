"""Who initialises what at start, and when, in each kind of cluster.

Between-graph modes (each worker runs its own graph):

  chief (worker 0)                     every other worker
  ----------------                     ------------------
  initialise the barrier               wait until the barrier exists
  initialise shared variables,         initialise its own (local) variables
  restore a checkpoint
  ------------- barrier 1: every worker has initialised -------------
  chief-only post-init (e.g. sync accumulators learn the global step)
  everyone's post-init (copies from the ps, collective broadcast, ...)
  ------------- barrier 2: start; warm-up and timing follow ----------

In-graph mode (distributed_all_reduce) the controller is the only client:
it initialises as a single process would, and waits for nobody.

The variable manager says what its mode needs (variable_update.base.
ClusterStart); the protocol runs it. ``doing(text)`` tells the watchdog
what the main thread is waiting for.
"""

from tf_cnn_benchmarks.cluster.task import start_barrier


def build(role, needs, startup):
  """The start protocol of ``role``'s cluster (in the task's graph);
  ``startup``: the task's deadlines.StartupClock, whose time left bounds
  each wait."""
  if needs.barrier_device is None:
    return InGraphStart()
  return BetweenGraphStart(role, needs, startup)


class InGraphStart:
  """The controller initialises everything itself."""

  def run(self, sess, built, restore, board, doing):
    with doing('initialising the variables'):
      sess.run(board.initializer)
      sess.run(built.init_ops)
      sess.run(built.input_init_ops)
      restore()
      sess.run(built.post_init_ops)


class BetweenGraphStart:
  """The chief initialises the shared state; two barriers (see above)."""

  def __init__(self, role, needs, startup):
    self.role = role
    self.startup = startup
    self.needs = needs
    self.barrier = start_barrier.StartBarrier(
        needs.barrier_device, role.num_workers, role.task_index)

  def run(self, sess, built, restore, board, doing):
    if self.role.is_chief:
      with doing('initialising the shared variables'):
        sess.run(self.barrier.initializer)
        sess.run(board.initializer)
        sess.run(built.init_ops)
        sess.run(built.input_init_ops)
        restore()
    else:
      with doing('waiting for the chief (worker0) to initialise the '
                 'cluster'):
        self.barrier.wait_until_created(sess, self.startup.left())
      with doing('initialising this worker\'s own variables'):
        sess.run(self.needs.own_init_ops)
        sess.run(built.input_init_ops)
    with doing('waiting at the initialisation barrier'):
      self.barrier.arrive_and_wait(sess, 1, self.startup.left(),
                                   'initialisation')
    with doing('post-initialisation (values from the chief)'):
      if self.role.is_chief and self.needs.chief_post_init_ops:
        sess.run(self.needs.chief_post_init_ops)
      if self.needs.post_init_ops:
        sess.run(self.needs.post_init_ops)
      # The mode's own post-init (e.g. tower copies from tower 0) comes
      # last: it must see what the cluster post-init brought in.
      sess.run(built.post_init_ops)
    with doing('waiting at the start barrier'):
      self.barrier.arrive_and_wait(sess, 2, self.startup.left(), 'start')
