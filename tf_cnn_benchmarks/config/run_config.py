"""Resolves Params into the concrete settings of one run (needs TensorFlow).

Flags leave some choices open (batch size 0 = model default, data format by
device, --device=gpu on a machine without one). This module makes every such
choice once, records why, and refuses impossible combinations with a
UsageError, so the driver never has to second-guess its inputs.
"""

import dataclasses
import math
import os
from typing import List, Optional, Tuple

import tensorflow as tf

from models import registry
import preprocessing
from preprocessing import synthetic
from tf_cnn_benchmarks.config import flag_checks
from tf_cnn_benchmarks.config import run_mode
from tf_cnn_benchmarks.config import usage_errors
from tf_cnn_benchmarks.config.usage_errors import UsageError

DEFAULT_NUM_BATCHES = 100
DEFAULT_NUM_WARMUP_BATCHES = 10

# Examples per epoch of the full datasets, used to turn --num_epochs into
# steps and epoch-based learning-rate schedules into step boundaries.
EXAMPLES_PER_EPOCH = synthetic.EXAMPLES_PER_EPOCH


# Batch size the ResNet base learning rate is given for (He et al. 2016).
RESNET_BASE_LR_BATCH_SIZE = 256


@dataclasses.dataclass(frozen=True)
class RunConfig:
  params: object
  model: registry.ModelSpec
  data_name: str
  device_type: str              # 'cpu' or 'gpu'
  tower_devices: List[str]      # e.g. ['/cpu:0', '/cpu:1']
  param_device: str             # where parameter_server keeps variables
  data_format: str
  compute_dtype: tf.DType
  batch_size_per_device: int
  num_workers: int
  mode: run_mode.RunMode
  num_batches: int
  num_warmup_batches: int
  subset: str                   # 'train' or 'validation'
  examples_per_epoch: int
  notes: List[str]              # choices made for the user, printed once
  # This task's cluster/roles.ClusterRole when it is part of a cluster.
  cluster: Optional[object] = None
  # How the run length was rounded, if it was (printed with the notes).
  run_length_note: Optional[str] = None
  # Evaluation during training: images per device of a validation step,
  # and validation steps per evaluation (with_validation_size).
  eval_batch_size_per_device: int = 0
  eval_steps: int = 0
  # --piecewise_learning_rate_schedule, parsed: (rates, epoch boundaries).
  piecewise_schedule: Optional[Tuple[List[float], List[float]]] = None

  @property
  def eval_batch_size_per_worker(self):
    return self.eval_batch_size_per_device * self.num_towers

  def with_validation_size(self, examples):
    """This run config once the validation set's size is known."""
    return dataclasses.replace(self, eval_steps=(
        _steps_per_evaluation(
            self.params, examples,
            self.eval_batch_size_per_worker * self.num_workers)))

  def with_examples_per_epoch(self, examples_per_epoch):
    """This run config for a dataset of ``examples_per_epoch`` (the real
    data's size, known once its source is open): --num_epochs becomes
    steps with this size, not the table's."""
    num_batches, warmup, note = _run_length(
        self.params, examples_per_epoch, self.global_batch_size)
    return dataclasses.replace(
        self, examples_per_epoch=examples_per_epoch, num_batches=num_batches,
        num_warmup_batches=warmup, run_length_note=note)

  def all_notes(self):
    return self.notes + ([self.run_length_note] if self.run_length_note
                         else [])

  @property
  def first_tower(self):
    """Index of this process's first tower among the cluster's towers
    (synthetic data gives each tower of the cluster its own images)."""
    if self.cluster is not None and self.cluster.job_name == 'worker':
      return self.cluster.task_index * self.num_towers
    return 0

  @property
  def num_towers(self):
    return len(self.tower_devices)

  @property
  def batch_size_per_worker(self):
    return self.batch_size_per_device * self.num_towers

  @property
  def global_batch_size(self):
    return self.batch_size_per_worker * self.num_workers

  @property
  def training(self):
    return self.mode.trains

  @property
  def initial_learning_rate(self):
    """The schedule's first rate, decided once (the optimizer's schedule
    and the MLPerf log both read it): the piecewise schedule's first, else
    --init_learning_rate, else the model's (--resnet_base_lr scaled to the
    global batch for the ImageNet ResNets, the models the original's flag
    applied to)."""
    params, model = self.params, self.model
    if self.piecewise_schedule is not None:
      return self.piecewise_schedule[0][0]
    if params.init_learning_rate is not None:
      return params.init_learning_rate
    if (params.resnet_base_lr and model.dataset == 'imagenet' and
        model.name.startswith('resnet')):
      return (params.resnet_base_lr * self.global_batch_size /
              RESNET_BASE_LR_BATCH_SIZE)
    return model.default_learning_rate


def gpus_available():
  return bool(tf.config.list_physical_devices('GPU'))


def infer_data_name(params):
  """--data_name; else CIFAR-10 when --data_dir holds CIFAR-10 batches; else
  from the model: CIFAR-10 only if it has no ImageNet form."""
  if params.data_name:
    return params.data_name
  if preprocessing.holds_cifar10(params.data_dir):
    return registry.CIFAR10
  if params.model in registry.model_names(registry.IMAGENET):
    return registry.IMAGENET
  if params.model in registry.model_names(registry.CIFAR10):
    return registry.CIFAR10
  return registry.IMAGENET


def resolve(params, cluster_role=None) -> RunConfig:
  """Makes every open choice of ``params``; raises UsageError if impossible.

  ``cluster_role``: a cluster/roles.ClusterRole; it decides the devices and
  the number of workers.
  """
  notes = []
  rewrite_options(params)  # a bad --rewriter_config is a usage error
  if (params.xla_compile or params.xla) and (
      params.device.lower() == 'cpu' or not tf.test.is_built_with_cuda()):
    _enable_xla_auto_clustering_on_cpu()
  data_name = infer_data_name(params)
  try:
    model = registry.get_model(params.model, data_name)
  except registry.UnknownModelError as e:
    raise UsageError('%s%s Run with --list_models to see them all.' % (
        e, usage_errors.did_you_mean(params.model, registry.model_names(
            data_name))))
  except registry.ModelNotProvidedError as e:
    raise UsageError(str(e))
  if model.reads_ids and params.data_dir:
    # The original ran ncf on synthetic ids only; no pipeline here reads a
    # ratings dataset.
    raise UsageError(
        '--model=%s reads user and item ids, which only synthetic data '
        'provides here (as in the original): drop --data_dir=%s.' % (
            model.name, params.data_dir))

  device_type = params.device.lower()
  has_gpu = gpus_available()
  if device_type == 'gpu' and not has_gpu:
    device_type = 'cpu'
    notes.append('No GPU is visible to TensorFlow: running on the CPU '
                 '(pass --device=cpu to say so and silence this note).')
  param_device = params.local_parameter_device.lower()
  if param_device == 'gpu' and not has_gpu:
    param_device = 'cpu'
  tower_devices = ['/%s:%d' % (device_type, i) for i in range(params.num_gpus)]
  param_device = '/%s:0' % param_device
  num_workers = 1

  if cluster_role is not None:
    tower_devices, param_device, num_workers = cluster_role.placement(
        device_type, params.num_gpus)

  data_format = params.data_format or ('NCHW' if device_type == 'gpu'
                                       else 'NHWC')

  if params.use_fp16:
    compute_dtype = tf.float16 if device_type == 'gpu' else tf.bfloat16
  else:
    compute_dtype = tf.float32

  mode = run_mode.of(params)
  subset = mode.subset
  if params.eval:
    batch = params.eval_batch_size or params.batch_size
  else:
    batch = params.batch_size
  batch = batch or model.default_batch_size

  # The table's size; a real dataset's replaces it once its source is open
  # (RunConfig.with_examples_per_epoch).
  examples_per_epoch = EXAMPLES_PER_EPOCH[(data_name, subset)]
  count, warmup, length_note = _run_length(
      params, examples_per_epoch, batch * len(tower_devices) * num_workers)

  return RunConfig(
      params=params, model=model, data_name=data_name,
      device_type=device_type, tower_devices=tower_devices,
      param_device=param_device, data_format=data_format,
      compute_dtype=compute_dtype, batch_size_per_device=batch,
      num_workers=num_workers, mode=mode, num_batches=count,
      num_warmup_batches=warmup, subset=subset,
      examples_per_epoch=examples_per_epoch, notes=notes,
      cluster=cluster_role, run_length_note=length_note,
      eval_batch_size_per_device=(
          params.eval_batch_size or batch
          if mode is run_mode.RunMode.TRAINING_AND_EVALUATION else 0),
      piecewise_schedule=(flag_checks.parse_piecewise_schedule(
          params.piecewise_learning_rate_schedule)
                          if params.piecewise_learning_rate_schedule
                          else None))


def _steps_per_evaluation(params, validation_examples, eval_global_batch):
  """Validation steps of one evaluation: --num_eval_batches, else
  --num_eval_epochs of the validation set, else one whole epoch of it."""
  if params.num_eval_batches:
    return params.num_eval_batches
  epochs = params.num_eval_epochs or 1.0
  return max(1, int(math.ceil(epochs * validation_examples /
                              eval_global_batch)))



def _run_length(params, examples_per_epoch, global_batch):
  """(timed steps, warm-up steps, a note or None) of a run whose epoch has
  ``examples_per_epoch`` examples."""
  note = None
  epochs = params.num_eval_epochs if params.eval else params.num_epochs
  count = params.num_eval_batches if params.eval else params.num_batches
  if params.eval and count is None:
    count = params.num_batches
  if epochs is not None and count is None:
    count = max(1, int(math.ceil(epochs * examples_per_epoch / global_batch)))
  if count is None:
    count = DEFAULT_NUM_BATCHES
  warmup = params.num_warmup_batches
  if warmup is None:
    warmup = DEFAULT_NUM_WARMUP_BATCHES
  group = params.batch_group_size
  if group > 1:
    # Whole groups only (engine_graph/batch_group.py): round both counts up.
    rounded = -(-count // group) * group
    if rounded != count:
      note = ('--batch_group_size=%d: %d timed steps rounded up to %d '
              '(whole groups).' % (group, count, rounded))
    count = rounded
    warmup = -(-warmup // group) * group
  return count, warmup, note


def session_config(params, run_config, num_cpu_devices=None):
  """ConfigProto: virtual CPU towers and the thread pools the flags ask for."""
  config = tf.compat.v1.ConfigProto(allow_soft_placement=False)
  if run_config.device_type == 'cpu':
    config.device_count['CPU'] = num_cpu_devices or run_config.num_towers
  if params.num_intra_threads is not None:
    config.intra_op_parallelism_threads = params.num_intra_threads
  config.inter_op_parallelism_threads = params.num_inter_threads
  if params.xla_compile or params.xla:
    config.graph_options.optimizer_options.global_jit_level = (
        tf.compat.v1.OptimizerOptions.ON_1)
  custom = rewrite_options(params)
  if custom is not None:
    config.graph_options.rewrite_options.CopyFrom(custom)
  elif not params.enable_optimizations:
    # Grappler's meta-optimizer and the classic graph optimizer (constant
    # folding, CSE, inlining) both off: the graph runs as built.
    config.graph_options.optimizer_options.opt_level = (
        tf.compat.v1.OptimizerOptions.L0)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
  return config


def rewrite_options(params):
  """--rewriter_config as a RewriterConfig (None when not given); raises
  UsageError for text that is not one."""
  if not params.rewriter_config:
    return None
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  from tensorflow.core.protobuf import rewriter_config_pb2  # pylint: disable=g-import-not-at-top
  config = rewriter_config_pb2.RewriterConfig()
  try:
    text_format.Merge(params.rewriter_config, config)
  except text_format.ParseError as e:
    raise UsageError(
        '--rewriter_config=%r is not a RewriterConfig in protobuf text '
        'format (%s); give fields as name: value, e.g. --rewriter_config='
        '"constant_folding: OFF arithmetic_optimization: OFF".' % (
            params.rewriter_config, str(e).replace('\n', ' '))) from None
  return config


def _enable_xla_auto_clustering_on_cpu():
  """Without --tf_xla_cpu_global_jit, TensorFlow 2.x ignores the jit level
  for CPU ops: --xla_compile would silently change nothing. XLA reads its
  flags once, when devices are first set up, so this must run before that
  (resolve does it first thing; a process that already listed devices or ran
  a session keeps its flags)."""
  flags = os.environ.get('TF_XLA_FLAGS', '')
  if '--tf_xla_cpu_global_jit' not in flags:
    os.environ['TF_XLA_FLAGS'] = (flags + ' --tf_xla_cpu_global_jit').strip()
