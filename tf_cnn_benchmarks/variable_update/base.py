"""What every variable manager does, and the parts they share.

A variable manager owns, for one --variable_update mode: where variables
live, how each tower's variables are scoped, how tower gradients become
updates, what runs after initialisation, and which variables a checkpoint
holds. The modes differ only in placement and communication, never in the
update math: every mode applies the *mean* of the tower gradients.

Variables are named ``v<i>/...`` (i = the tower owning the copy; shared
variables live under ``v0``). Checkpoints use the *canonical* name (the
tower prefix stripped), so a checkpoint written in one mode restores in any
other, and in --eval.
"""

import contextlib
import dataclasses
import re
import zlib
from typing import List, Optional

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import modes

tf1 = tf.compat.v1

_TOWER_PREFIX = re.compile(r'^v\d+/')


def canonical_name(var_or_name):
  """'v1/conv0/kernel:0' -> 'conv0/kernel' (mode-independent name)."""
  name = getattr(var_or_name, 'op', None)
  name = name.name if name is not None else var_or_name
  name = name.split(':')[0]
  return _TOWER_PREFIX.sub('', name)


def seeded_initializer_getter(base_seed):
  """A custom getter giving every variable a seed from its canonical name.

  TensorFlow derives an op's seed from the graph seed and the op's position
  in the graph, which differs between modes (they build different graphs).
  Seeding from the name instead makes every mode, and every replica, start
  from the same weights, which is what lets us test that the modes compute
  the same thing.
  """

  # TensorFlow passes the next getter as the keyword argument `getter`.
  def seeded_getter(getter, name, *args, **kwargs):
    init = kwargs.get('initializer')
    if init is not None and hasattr(init, 'get_config'):
      config = init.get_config()
      if 'seed' in config:
        config['seed'] = (zlib.crc32(canonical_name(name).encode()) ^
                          base_seed) & 0x7fffffff
        # dtype comes from get_variable; passing it to the constructor is
        # deprecated.
        config.pop('dtype', None)
        kwargs['initializer'] = type(init).from_config(config)
    return getter(name, *args, **kwargs)

  return seeded_getter


def mean_of(tensors):
  if len(tensors) == 1:
    return tensors[0]
  return tf.math.add_n(tensors) * (1.0 / len(tensors))


@dataclasses.dataclass
class ClusterStart:
  """What a cluster mode's graph needs at start; the cluster runtime
  (cluster/task/start_protocol.py) runs it, with the barriers, in order."""
  # Images one global-step increment stands for (the chief's cluster rate).
  images_per_global_step: int
  # Where the start barrier and the progress board live. None: one client
  # (the controller) drives the cluster, and nobody waits for anybody.
  barrier_device: Optional[str] = None
  # What a non-chief worker initialises itself.
  own_init_ops: List[object] = dataclasses.field(default_factory=list)
  # After barrier 1: the chief's, then everyone's.
  chief_post_init_ops: List[object] = dataclasses.field(default_factory=list)
  post_init_ops: List[object] = dataclasses.field(default_factory=list)


class VariableManager:
  """Base class; subclasses set ``name`` and override the hooks."""

  name = ''
  # Does every tower own a copy of each variable?
  per_tower_copies = True

  def __init__(self, run_config):
    self.rc = run_config
    self.seed = run_config.params.tf_random_seed

  @property
  def mode(self):
    """The facts of this manager's mode (modes.Mode)."""
    return modes.get(self.name)

  @property
  def towers(self):
    return self.rc.tower_devices

  @contextlib.contextmanager
  def tower_scope(self, index):
    """Device and variable scope for building tower ``index``."""
    with tf1.device(self.towers[index]), tf1.variable_scope(
        'v%d' % index,
        custom_getter=seeded_initializer_getter(self.seed)):
      yield

  @contextlib.contextmanager
  def eval_scope(self, index):
    """Device and variable scope of an evaluation tower on device ``index``:
    it reuses the variables tower ``index`` trains (creates none)."""
    prefix = 'v%d' % (index if self.per_tower_copies else 0)
    with tf1.device(self.towers[index]), tf1.variable_scope(prefix,
                                                             reuse=True):
      yield

  def tower_variables(self, index):
    """Trainable variables tower ``index`` computes with, in creation order."""
    prefix = 'v%d/' % (index if self.per_tower_copies else 0)
    return [v for v in tf1.trainable_variables() if v.op.name.startswith(
        prefix)]

  def apply_gradients(self, tower_grads, optimizer, global_step):
    """tower_grads[i] = [(grad, var)] of tower i; returns the update op."""
    raise NotImplementedError

  def post_init_ops(self):
    """Ops to run once after initialisation (e.g. make copies equal)."""
    return []

  @property
  def report_device(self):
    """Where the towers' reported numbers (losses, top-k counts) are
    combined each step: near the client that fetches them."""
    return self.rc.param_device

  def default_device_scope(self):
    """Device scope for ops no tower places (a cluster task's own)."""
    return contextlib.nullcontext()

  def savable_variables(self):
    """{canonical name: variable}: the one copy a checkpoint stores."""
    return {canonical_name(v): v for v in tf1.global_variables()
            if v.op.name.startswith('v0/')}
