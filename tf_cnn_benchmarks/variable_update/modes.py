"""The --variable_update modes: what each one is, and which manager builds it.

One row per mode, read by everything that must know a fact about a mode:
the flags (which modes run where), the cluster's role and launcher (ps
tasks? a controller? lockstep?), the stall report's wording, and the
manager registry. The manager classes build the graph and expose their row
as ``manager.mode``; the row itself lives here, with no TensorFlow, because
the flags and the cluster's host checks read it before TensorFlow loads.
"""

import dataclasses
from typing import Optional

MULTI_WORKER_MIRRORED = 'MultiWorkerMirroredStrategy'
PARAMETER_SERVER = 'ParameterServerStrategy'


@dataclasses.dataclass(frozen=True)
class Mode:
  name: str
  # 'module.Class' of the manager under variable_update/, for a single
  # process and for a task of a cluster (None: the mode does not run there).
  local_manager: Optional[str] = None
  cluster_manager: Optional[str] = None
  # Variables live on ps tasks (a cluster of this mode needs --ps_hosts).
  has_ps_tasks: bool = False
  # One graph over every worker, built and run by a controller task; the
  # workers only serve their devices.
  needs_controller: bool = False
  # Gradients cross workers through TensorFlow's collective ops (a step must
  # not touch another task's variables, see cluster/task/progress_board.py).
  uses_collectives: bool = False
  # Every step is an all-reduce: synchronous by construction, no ps tasks.
  all_reduce: bool = False
  # Towers (and workers) combine their gradients; False: each trains alone.
  exchanges_gradients: bool = True
  # The tf.distribute strategy a cluster of this mode runs under with
  # --engine=tf2 (None: no tf.distribute equivalent, graph engine only).
  tf2_cluster_strategy: Optional[str] = None

  @property
  def runs_locally(self):
    return self.local_manager is not None

  @property
  def runs_in_cluster(self):
    return self.cluster_manager is not None


MODES = {m.name: m for m in (
    # With --engine=tf2: ParameterServerStrategy, whose coordinator (the
    # cluster's controller task) runs each step on some worker, which
    # applies its own gradient: a round of one step per worker, waited for
    # before the next with --sync_updates=barrier, the next one queued with
    # --cross_replica_sync=False (engine_tf2/train_step.py); true
    # synchronous SGD (--sync_updates=mean) is refused (config/flag_checks.py).
    Mode('parameter_server',
         local_manager='parameter_server.ParameterServerManager',
         cluster_manager=('distributed_parameter_server.'
                          'DistributedParameterServerManager'),
         has_ps_tasks=True, tf2_cluster_strategy=PARAMETER_SERVER),
    Mode('replicated', local_manager='replicated.ReplicatedManager'),
    Mode('independent', local_manager='independent.IndependentManager',
         exchanges_gradients=False),
    Mode('distributed_replicated',
         cluster_manager=('distributed_replicated.'
                          'DistributedReplicatedManager'),
         has_ps_tasks=True),
    # With --engine=tf2 both all-reduce modes are TensorFlow 2's one
    # synchronous multi-worker strategy: every worker runs the step, so
    # there is no controller (cluster/roles.has_controller).
    Mode('distributed_all_reduce',
         cluster_manager='distributed_all_reduce.DistributedAllReduceManager',
         needs_controller=True, all_reduce=True,
         tf2_cluster_strategy=MULTI_WORKER_MIRRORED),
    Mode('collective_all_reduce',
         cluster_manager='collective_all_reduce.CollectiveAllReduceManager',
         uses_collectives=True, all_reduce=True,
         tf2_cluster_strategy=MULTI_WORKER_MIRRORED),
)}


def get(name):
  """The Mode called ``name`` (KeyError for a name that is not a mode)."""
  return MODES[name]


def names(**facts):
  """Mode names, in table order, whose facts match, e.g.
  names(runs_locally=True) or names(has_ps_tasks=True)."""
  return tuple(m.name for m in MODES.values()
               if all(getattr(m, k) == v for k, v in facts.items()))
