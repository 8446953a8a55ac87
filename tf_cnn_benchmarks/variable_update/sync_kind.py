"""How a cluster's workers combine their updates, decided once from
--cross_replica_sync and --sync_updates.

Every module that must know reads ClusterRole.sync (or, while the flags
are checked, ``of``); nobody decodes the two flags again. TensorFlow-free.
"""

import enum


class SyncKind(enum.Enum):
  # Each worker applies its own gradient whenever it has one
  # (--cross_replica_sync=False).
  ASYNC = 'async'
  # Each worker applies its own gradient, then waits for every other
  # worker's (--sync_updates=barrier: the original's synchronous ps).
  BARRIER = 'barrier'
  # The mean of every worker's gradient, applied once per step
  # (--sync_updates=mean, the default: true synchronous SGD).
  MEAN = 'mean'

  @property
  def synchronous(self):
    return self is not SyncKind.ASYNC


def of(cross_replica_sync, sync_updates):
  if not cross_replica_sync:
    return SyncKind.ASYNC
  return SyncKind.BARRIER if sync_updates == 'barrier' else SyncKind.MEAN
