"""Which tf.distribute strategy a run's flags mean, and the devices it needs.

One device: the default strategy (what a TensorFlow 2 user gets without
asking for one). --num_gpus=N --variable_update=replicated: MirroredStrategy
over the run's N tower devices; on a CPU those are N virtual CPU devices,
the TF2 form of the graph engine's ConfigProto(device_count={'CPU': N})
(run_config.session_config). Combinations without a tf.distribute
equivalent never get here: config/flag_checks.py refuses them, naming the engine
that runs them.
"""

from typing import Any, NamedTuple

import tensorflow as tf

DEFAULT, MIRRORED = 'default strategy', 'MirroredStrategy'


class Chosen(NamedTuple):
  """What a run trains under."""
  strategy: Any
  name: str  # for the report's header
  # ParameterServerStrategy's ClusterCoordinator, which schedules the steps
  # (made by the cluster task's runtime with its strategy); else None.
  coordinator: Any = None


class DevicesAlreadySet(RuntimeError):
  """TensorFlow's runtime started before the run could make its devices."""


def make_virtual_cpus(count):
  """At least ``count`` logical CPU devices, /cpu:0 ... /cpu:<count-1>.

  TensorFlow fixes its logical devices when its runtime starts (the first
  eager op): this must run before that, which the engine's ``prepare``
  does, first thing in the run.
  """
  if count <= 1:
    return
  cpus = tf.config.list_physical_devices('CPU')
  existing = tf.config.get_logical_device_configuration(cpus[0])
  if existing and len(existing) >= count:
    return
  try:
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration()] * count)
  except RuntimeError:
    have = len(tf.config.list_logical_devices('CPU'))
    if have < count:
      raise DevicesAlreadySet(
          'the tf2 engine needs %d CPU devices, but TensorFlow already '
          'started with %d in this process; run it in a fresh process (or '
          'call engine_tf2.strategies.make_virtual_cpus(%d) before any '
          'TensorFlow op).' % (count, have, count)) from None


def set_threads(params):
  """--num_intra_threads / --num_inter_threads, as the session's pools
  (no-op once the runtime started: it keeps the pools it has)."""
  try:
    if params.num_intra_threads is not None:
      tf.config.threading.set_intra_op_parallelism_threads(
          params.num_intra_threads)
    tf.config.threading.set_inter_op_parallelism_threads(
        params.num_inter_threads)
  except RuntimeError:
    pass


def set_memory_growth(params):
  """--allow_growth in tf.config's words (the graph engine's is its
  ConfigProto's gpu_options.allow_growth): every GPU's memory grows on
  demand, or not. Must precede the runtime's start; without a GPU there is
  nothing to set (the run's note says so, config/gpu_settings.py).
  Returns the GPUs set."""
  if params.allow_growth is None:
    return []
  gpus = tf.config.list_physical_devices('GPU')
  for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, params.allow_growth)
  return gpus


def prepare_runtime(params):
  """The runtime's settings from the flags: thread pools and GPU memory
  growth (a single process's and a cluster task's)."""
  set_threads(params)
  set_memory_growth(params)


def prepare_devices(rc):
  """Everything about devices that must precede the runtime's start."""
  prepare_runtime(rc.params)
  if rc.device_type == 'cpu':
    make_virtual_cpus(rc.num_towers)


def choose(rc):
  """The Chosen strategy of a single-process run."""
  if rc.num_towers == 1:
    return Chosen(tf.distribute.get_strategy(), DEFAULT)
  # config/flag_checks.py let only replicated through with several devices.
  assert rc.params.variable_update == 'replicated', rc.params.variable_update
  return Chosen(tf.distribute.MirroredStrategy(devices=rc.tower_devices),
                MIRRORED)
