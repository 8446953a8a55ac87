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
from tf_cnn_benchmarks.config import gpu_settings
from tf_cnn_benchmarks.config import run_mode
from tf_cnn_benchmarks.config import usage_errors
from tf_cnn_benchmarks.config.usage_errors import UsageError
from tf_cnn_benchmarks.measure import environment
from tf_cnn_benchmarks.variable_update import all_reduce_spec

DEFAULT_NUM_BATCHES = 100
DEFAULT_NUM_WARMUP_BATCHES = 10

# Examples per epoch of the full datasets, used to turn --num_epochs into
# steps and epoch-based learning-rate schedules into step boundaries.
EXAMPLES_PER_EPOCH = synthetic.EXAMPLES_PER_EPOCH


# The original's models' loss scale for float16 (its --fp16_loss_scale
# default).
DEFAULT_FLOAT16_LOSS_SCALE = 128.0


@dataclasses.dataclass(frozen=True)
class LossScaling:
  """The loss scale of a run (training/loss_scale.py applies it)."""
  initial: float
  # Automatic: halve and skip on a non-finite gradient, double after
  # grow_every_n good steps in a row (the original's rule).
  automatic: bool
  grow_every_n: int

  def describe(self):
    if not self.automatic:
      return '%.10g (fixed)' % self.initial
    return ('%.10g at first, automatic: a step with a non-finite gradient is '
            'skipped and halves it, %d good steps in a row double it on the '
            'next' % (self.initial, self.grow_every_n))


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
  # Does TensorFlow see a GPU on this machine (whatever --device says)?
  gpus_visible: bool = False
  # Of the convolution and dense weights (--fp16_vars); batch norm's are
  # always float32.
  variable_dtype: tf.DType = tf.float32
  # How training scales its loss (--fp16_loss_scale, --fp16_enable_auto_
  # loss_scale), or None: not at all.
  loss_scaling: Optional['LossScaling'] = None

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
  if device_type != 'gpu' and all_reduce_spec.uses_nccl(
      params.all_reduce_spec):
    # Refused before anything is built: NCCL's kernels exist for GPUs only.
    raise UsageError(
        '--all_reduce_spec=%s all-reduces with NCCL, between GPUs, but this '
        'run\'s towers are CPUs (%s); use --all_reduce_spec=xring or pscpu '
        'here.' % (params.all_reduce_spec,
                   'no GPU is visible to TensorFlow' if not has_gpu
                   else '--device=cpu'))
  idle_note = gpu_settings.idle_note(gpu_settings.idle(params, has_gpu))
  if idle_note:
    notes.append(idle_note)
  if device_type == 'gpu':
    params = _gpu_thread_defaults(params, notes)
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
  if data_format == 'NCHW' and device_type == 'cpu':
    _refuse_nchw_without_onednn()

  compute_dtype = _compute_dtype(params, device_type)

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
      gpus_visible=has_gpu,
      variable_dtype=(compute_dtype if params.use_fp16 and params.fp16_vars
                      else tf.float32),
      loss_scaling=_loss_scaling(params, compute_dtype, mode),
      eval_batch_size_per_device=(
          params.eval_batch_size or batch
          if mode is run_mode.RunMode.TRAINING_AND_EVALUATION else 0),
      piecewise_schedule=(flag_checks.parse_piecewise_schedule(
          params.piecewise_learning_rate_schedule)
                          if params.piecewise_learning_rate_schedule
                          else None))


def _refuse_nchw_without_onednn():
  """NCHW on a CPU runs only on oneDNN's kernels: TensorFlow's own CPU
  pooling and convolution kernels are NHWC only, so without oneDNN the run
  would fail at its first step with a kernel error. TensorFlow turns oneDNN
  on by itself only on CPUs with AVX-512 VNNI, BF16 or AMX."""
  if environment.tf_build()['onednn'] is not False:
    return
  switch = os.environ.get('TF_ENABLE_ONEDNN_OPTS')
  why = ('TF_ENABLE_ONEDNN_OPTS=%s turns it off' % switch if switch else
         'TensorFlow turns it on by itself only on CPUs with AVX-512 VNNI, '
         'BF16 or AMX, which this one lacks')
  raise UsageError(
      '--data_format=NCHW on the CPU needs TensorFlow\'s oneDNN kernels '
      '(its own CPU kernels pool and convolve in NHWC only), and oneDNN is '
      'off in this process: %s. Run with TF_ENABLE_ONEDNN_OPTS=1 to turn it '
      'on, or drop --data_format (NHWC is the CPU default).' % why)


def _compute_dtype(params, device_type):
  """--use_fp16's type: --fp16_dtype, else float16 on a GPU (the
  original's) and bfloat16 on a CPU."""
  if not params.use_fp16:
    return tf.float32
  if params.fp16_dtype != 'auto':
    return tf.as_dtype(params.fp16_dtype)
  return tf.float16 if device_type == 'gpu' else tf.bfloat16


def _loss_scaling(params, compute_dtype, mode):
  """How a training run scales its loss, or None (evaluation and
  inference compute no gradients, and a scale of 1 changes nothing)."""
  if not (params.use_fp16 and mode.trains):
    return None
  default = (DEFAULT_FLOAT16_LOSS_SCALE if compute_dtype == tf.float16
             else 1.0)
  initial = params.fp16_loss_scale or default
  if initial == 1 and not params.fp16_enable_auto_loss_scale:
    return None
  return LossScaling(float(initial), params.fp16_enable_auto_loss_scale,
                     params.fp16_inc_loss_scale_every_n)


def _gpu_thread_defaults(params, notes):
  """On a GPU, --gpu_thread_mode's host threads are taken from the
  session's inter-op pool and the input pipeline's private pool when the
  user sized neither, as the original did: params with those sizes."""
  cpus = os.cpu_count() or 1
  gpu_threads = ((params.per_gpu_thread_count or
                  gpu_settings.DEFAULT_PER_GPU_THREADS) * params.num_gpus)
  changes = {}
  if not params.num_inter_threads and params.gpu_thread_mode in (
      'gpu_private', 'gpu_shared'):
    changes['num_inter_threads'] = max(cpus - gpu_threads, 1)
  if params.datasets_use_prefetch and (
      params.datasets_num_private_threads is None):
    # Two more per GPU watch its events and move its tensors.
    changes['datasets_num_private_threads'] = max(
        cpus - gpu_threads - 2 * params.num_gpus, 1)
  if not changes:
    return params
  notes.append('--gpu_thread_mode=%s keeps %d host threads for the GPUs: %s '
               '(the original\'s sizes; give the flags to choose).' % (
                   params.gpu_thread_mode, gpu_threads, ', '.join(
                       '--%s=%d' % kv for kv in sorted(changes.items()))))
  return params.replace(**changes)


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
    # cuDNN autotunes each convolution --autotune_threshold times: the
    # original's default warm-up outlasts that.
    threshold = params.autotune_threshold or 1
    warmup = max(DEFAULT_NUM_WARMUP_BATCHES, 5 * threshold * threshold)
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
  """ConfigProto: virtual CPU towers, the thread pools the flags ask for and
  the GPU runtime's settings (config/gpu_settings.py)."""
  config = tf.compat.v1.ConfigProto(allow_soft_placement=False)
  if run_config.device_type == 'cpu':
    config.device_count['CPU'] = num_cpu_devices or run_config.num_towers
  if params.num_intra_threads is not None:
    config.intra_op_parallelism_threads = params.num_intra_threads
  elif run_config.device_type == 'gpu':
    # The original's GPU default: the GPU does the ops' work, one host
    # thread per op launches it.
    config.intra_op_parallelism_threads = 1
  for path, value in gpu_settings.config_proto_fields(params).items():
    gpu_settings.set_field(config, path, value)
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
