"""Every command-line flag, grouped by theme, and the Params value object.

Flag names and defaults are the original tool's (users' scripts type them);
the harness's own additions are in the last theme. The table below is the
single source: it defines the absl flags for the command line *and* the
defaults of ``make_params`` for code and tests that call a run directly.

This module must not import TensorFlow: flags are parsed (and logging is
configured from --verbosity) before TensorFlow is loaded.
"""

import dataclasses
import sys
import types
from typing import Any, Optional, Sequence

from absl import flags as absl_flags

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.variable_update import modes


class UsageError(ValueError):
  """A bad flag value or combination; the message is shown to the user."""


def report_usage_error(message):
  """Prints a UsageError's paragraph; returns the usage exit code."""
  sys.stderr.write('Error: %s\n' % message)
  return exit_codes.USAGE


@dataclasses.dataclass(frozen=True)
class FlagSpec:
  theme: str
  name: str
  kind: str  # string | integer | float | boolean | enum | list
  default: Any
  help: str
  enum_values: Optional[Sequence[str]] = None
  lower_bound: Optional[float] = None
  upper_bound: Optional[float] = None


MODEL = 'Model & run mode'
BATCH = 'Batch size, run length & console reporting'
DEVICES = 'Devices & threading'
DATA = 'Input data & preprocessing'
OPTIMIZER = 'Optimizer, learning rate & loss'
VARIABLES = 'Variable management & gradient aggregation'
CLUSTER = 'Distributed (multi-process / multi-host)'
PRECISION = 'Precision, compilation & graph options'
CHECKPOINTS = 'Checkpoints'
DEBUG = 'Debugging & profiling'
HARNESS = 'Results, logging & fault handling (this harness)'

THEMES = (MODEL, BATCH, DEVICES, DATA, OPTIMIZER, VARIABLES, CLUSTER,
          PRECISION, CHECKPOINTS, DEBUG, HARNESS)

# What each mode is, and where it runs: variable_update/modes.py.
VARIABLE_UPDATES = tuple(modes.MODES) + ('horovod',)
# Protocols TensorFlow servers have had; which ones this build has is
# checked at start-up (cluster.check_protocol).
SERVER_PROTOCOLS = ('grpc', 'grpc+verbs', 'grpc+mpi', 'grpc+gdr')

_S = FlagSpec
FLAG_SPECS = (
    # -- model & mode
    _S(MODEL, 'model', 'string', 'trivial',
       'Name of the model to run (see --list_models).'),
    _S(MODEL, 'eval', 'boolean', False,
       'Evaluate the latest checkpoint in --train_dir instead of training.'),
    _S(MODEL, 'forward_only', 'boolean', False,
       'Run only the forward pass (inference throughput), no gradients.'),
    _S(MODEL, 'print_training_accuracy', 'boolean', False,
       'Add top-1/top-5 training accuracy columns to the step lines.'),
    _S(MODEL, 'list_models', 'boolean', False,
       'Print the registered models per dataset and exit.'),
    _S(MODEL, 'eval_during_training_every_n_steps', 'integer', None,
       'Evaluate on the validation split every N timed training steps (and '
       'after the last one); training pauses meanwhile and the timed '
       'loop\'s clock stops.', lower_bound=1),
    _S(MODEL, 'eval_during_training_every_n_epochs', 'float', None,
       'Evaluate every N epochs of training (and after the last step).',
       lower_bound=0),
    _S(MODEL, 'eval_during_training_at_specified_steps', 'list', [],
       'Evaluate after these timed steps, e.g. 100,500 (and after the last '
       'one).'),
    _S(MODEL, 'eval_during_training_at_specified_epochs', 'list', [],
       'Evaluate after these epochs of training, e.g. 0.5,1 (and after the '
       'last step).'),
    _S(MODEL, 'stop_at_top_1_accuracy', 'float', None,
       'End training after an evaluation during training reaches this '
       'top-1 accuracy (0..1).', lower_bound=0, upper_bound=1),
    _S(MODEL, 'eval_interval_secs', 'integer', 0,
       'With --eval: after the latest checkpoint, evaluate every newer one '
       'that appears in --train_dir, checking this often, until stopped '
       '(SIGINT/SIGTERM). 0: evaluate once.', lower_bound=0),
    _S(MODEL, 'collect_eval_results_async', 'boolean', False,
       'Post-process evaluation results in a separate process. Only the '
       'original\'s SSD model post-processed them; no model here does, so '
       'this changes nothing (accepted for old command lines).'),
    # -- batch & reporting
    _S(BATCH, 'batch_size', 'integer', 0,
       'Batch size per device (tower); 0 means the model\'s default.',
       lower_bound=0),
    _S(BATCH, 'eval_batch_size', 'integer', 0,
       'Per-device batch size for --eval; 0 means --batch_size.',
       lower_bound=0),
    _S(BATCH, 'batch_group_size', 'integer', 1,
       'Number of steps run per session.run call (amortises call overhead). '
       'Step and warm-up counts are rounded up to whole groups; each step '
       'is recorded with its group\'s wall time / N and its own loss. '
       'Single process only.', lower_bound=1),
    _S(BATCH, 'num_batches', 'integer', None,
       'Number of timed steps; default 100 unless --num_epochs is given.',
       lower_bound=1),
    _S(BATCH, 'num_eval_batches', 'integer', None,
       'Number of eval steps; default --num_batches.', lower_bound=1),
    _S(BATCH, 'num_epochs', 'float', None,
       'Run length in epochs of the dataset (excludes --num_batches).',
       lower_bound=0),
    _S(BATCH, 'num_eval_epochs', 'float', None,
       'Eval length in epochs of the validation set.', lower_bound=0),
    _S(BATCH, 'num_warmup_batches', 'integer', None,
       'Untimed steps before timing starts; default 10.', lower_bound=0),
    _S(BATCH, 'display_every', 'integer', 10,
       'Print a step line every this many timed steps.', lower_bound=1),
    _S(BATCH, 'loss_type_to_report', 'enum', 'total_loss',
       'Loss printed on step lines: with weight decay (total_loss) or '
       'without (base_loss).', enum_values=('base_loss', 'total_loss')),
    # -- devices
    _S(DEVICES, 'device', 'enum', 'gpu',
       'Device of the towers. Without a visible GPU the run uses the CPU '
       '(and says so).', enum_values=('cpu', 'gpu', 'CPU', 'GPU')),
    _S(DEVICES, 'num_gpus', 'integer', 1,
       'Number of towers (devices) per worker. With --device=cpu this many '
       'virtual CPU devices are created, so multi-tower graphs are real.',
       lower_bound=1),
    _S(DEVICES, 'data_format', 'enum', None,
       'Activation layout. Default NCHW on GPU, NHWC on CPU.',
       enum_values=('NHWC', 'NCHW')),
    _S(DEVICES, 'local_parameter_device', 'enum', 'gpu',
       'Where parameter_server mode keeps variables in a single process '
       '(falls back to cpu without a GPU).',
       enum_values=('cpu', 'gpu', 'CPU', 'GPU')),
    _S(DEVICES, 'num_intra_threads', 'integer', None,
       'Threads inside one op; default: TensorFlow decides.', lower_bound=0),
    _S(DEVICES, 'num_inter_threads', 'integer', 0,
       'Ops run in parallel; 0 lets TensorFlow decide.', lower_bound=0),
    # -- data
    _S(DATA, 'data_dir', 'string', None,
       'Folder of the dataset; without it the run uses synthetic data.'),
    _S(DATA, 'data_name', 'enum', None,
       'Dataset: imagenet or cifar10. Default: from the model (imagenet '
       'unless only a CIFAR-10 form exists).',
       enum_values=('imagenet', 'cifar10')),
    _S(DATA, 'resize_method', 'enum', 'bilinear',
       'Image resize method for real data.',
       enum_values=('bilinear', 'nearest', 'bicubic', 'area')),
    _S(DATA, 'distortions', 'boolean', False,
       'Add colour distortions to training images.'),
    _S(DATA, 'fuse_decode_and_crop', 'boolean', True,
       'Decode only the cropped window of each JPEG.'),
    _S(DATA, 'datasets_use_prefetch', 'boolean', True,
       'Prefetch input batches.'),
    _S(DATA, 'datasets_prefetch_buffer_size', 'integer', 1,
       'Batches to prefetch per tower.', lower_bound=1),
    _S(DATA, 'datasets_num_private_threads', 'integer', None,
       'A private thread pool of this size for the input pipeline.',
       lower_bound=1),
    _S(DATA, 'datasets_use_caching', 'boolean', False,
       'Cache decoded records in memory after the first epoch.'),
    _S(DATA, 'datasets_parallel_interleave_cycle_length', 'integer', None,
       'Shards read in parallel; default: AUTOTUNE.', lower_bound=1),
    _S(DATA, 'input_only', 'boolean', False,
       'Measure the input pipeline alone: images/sec with no model.'),
    # -- optimizer
    _S(OPTIMIZER, 'optimizer', 'enum', 'sgd',
       'Optimizer (momentum is Nesterov momentum, as in the original).',
       enum_values=('momentum', 'sgd', 'rmsprop', 'adam')),
    _S(OPTIMIZER, 'init_learning_rate', 'float', None,
       'Initial learning rate; default: the model\'s.', lower_bound=0),
    _S(OPTIMIZER, 'piecewise_learning_rate_schedule', 'string', None,
       'Learning rates and epoch boundaries: "r0;e1;r1;e2;r2" uses r0 '
       'until epoch e1, then r1 until e2, then r2.'),
    _S(OPTIMIZER, 'num_epochs_per_decay', 'float', 0,
       'Epochs between exponential decays (with --learning_rate_decay_factor).',
       lower_bound=0),
    _S(OPTIMIZER, 'learning_rate_decay_factor', 'float', 0,
       'Factor of each exponential decay.', lower_bound=0),
    _S(OPTIMIZER, 'num_learning_rate_warmup_epochs', 'float', 0,
       'Linear learning-rate warm-up length in epochs.', lower_bound=0),
    _S(OPTIMIZER, 'minimum_learning_rate', 'float', 0,
       'Lower bound of the decayed learning rate.', lower_bound=0),
    _S(OPTIMIZER, 'momentum', 'float', 0.9, 'Momentum (momentum optimizer).'),
    _S(OPTIMIZER, 'rmsprop_decay', 'float', 0.9, 'RMSProp decay.'),
    _S(OPTIMIZER, 'rmsprop_momentum', 'float', 0.9, 'RMSProp momentum.'),
    _S(OPTIMIZER, 'rmsprop_epsilon', 'float', 1.0, 'RMSProp epsilon.'),
    _S(OPTIMIZER, 'adam_beta1', 'float', 0.9, 'Adam beta1.'),
    _S(OPTIMIZER, 'adam_beta2', 'float', 0.999, 'Adam beta2.'),
    _S(OPTIMIZER, 'adam_epsilon', 'float', 1e-8, 'Adam epsilon.'),
    _S(OPTIMIZER, 'gradient_clip', 'float', None,
       'Clip each gradient to this norm.', lower_bound=0),
    _S(OPTIMIZER, 'weight_decay', 'float', 4e-5,
       'L2 weight decay (batch-norm parameters excluded).', lower_bound=0),
    # -- variables
    _S(VARIABLES, 'variable_update', 'enum', 'parameter_server',
       'How variables are placed and gradients combined.',
       enum_values=VARIABLE_UPDATES),
    _S(VARIABLES, 'all_reduce_spec', 'enum', None,
       'In-graph gradient reduction for replicated mode: "spread" (each '
       'gradient summed on a tower chosen round-robin, the default) or '
       '"pscpu" (every gradient summed on the CPU).',
       enum_values=('spread', 'pscpu')),
    # -- cluster
    _S(CLUSTER, 'job_name', 'enum', '',
       'This task\'s job in a cluster; empty for a single process.',
       enum_values=('ps', 'worker', 'controller', '')),
    _S(CLUSTER, 'ps_hosts', 'string', '',
       'Comma-separated host:port of the parameter-server tasks.'),
    _S(CLUSTER, 'worker_hosts', 'string', '',
       'Comma-separated host:port of the worker tasks.'),
    _S(CLUSTER, 'controller_host', 'string', None,
       'host:port of the controller (distributed_all_reduce).'),
    _S(CLUSTER, 'task_index', 'integer', 0, 'Index of this task in its job.',
       lower_bound=0),
    _S(CLUSTER, 'server_protocol', 'string', 'grpc',
       'Protocol of the TensorFlow servers (grpc; grpc+verbs etc. need a '
       'TensorFlow build that has them).'),
    _S(CLUSTER, 'cross_replica_sync', 'boolean', True,
       'Synchronous training across workers (False: asynchronous).'),
    _S(CLUSTER, 'cluster_spec', 'string', None,
       'A JSON file describing the cluster instead of --ps_hosts/'
       '--worker_hosts/--controller_host: {"ps": [...], "worker": [...]}, '
       'or the TF_CONFIG form {"cluster": {...}, "task": {"type": ..., '
       '"index": ...}} (whose task sets --job_name/--task_index).'),
    # -- precision
    _S(PRECISION, 'use_fp16', 'boolean', False,
       'Half-precision compute with float32 master weights: float16 on GPU, '
       'bfloat16 on CPU.'),
    _S(PRECISION, 'xla_compile', 'boolean', False,
       'Compile the model with XLA.'),
    _S(PRECISION, 'xla', 'boolean', False,
       'Same as --xla_compile (the original\'s auto-clustering switch).'),
    _S(PRECISION, 'tf_random_seed', 'integer', 1234,
       'Seed of every random op, so two runs (and two variable_update modes) '
       'start from the same weights and data.'),
    # -- checkpoints
    _S(CHECKPOINTS, 'train_dir', 'string', None,
       'Folder for checkpoints: restored from when present, saved to at the '
       'end and per --save_model_steps/--save_model_secs; --eval reads it.'),
    _S(CHECKPOINTS, 'save_model_secs', 'integer', 0,
       'Save a checkpoint every this many seconds (0: off).', lower_bound=0),
    _S(CHECKPOINTS, 'save_model_steps', 'integer', None,
       'Save a checkpoint every this many steps.', lower_bound=1),
    _S(CHECKPOINTS, 'max_ckpts_to_keep', 'integer', 5,
       'Checkpoints kept in --train_dir.', lower_bound=1),
    _S(CHECKPOINTS, 'summary_verbosity', 'integer', 0,
       'TensorBoard summaries in --train_dir: 0 none; 1 loss, learning rate '
       'and images/sec; 2 also the gradients\' global norm; 3 also '
       'histograms of every variable and its gradient. With --eval: '
       'accuracies in --eval_dir.', lower_bound=0, upper_bound=3),
    _S(CHECKPOINTS, 'save_summaries_steps', 'integer', 0,
       'Write summaries every this many timed steps (needed with '
       '--summary_verbosity >= 1 when training).', lower_bound=0),
    _S(CHECKPOINTS, 'eval_dir', 'string', '/tmp/tf_cnn_benchmarks/eval',
       'Where --eval writes its accuracy summaries (with '
       '--summary_verbosity >= 1).'),
    # -- debugging
    _S(DEBUG, 'trace_file', 'string', '',
       'Write a Chrome trace of one extra (untimed) step to this file.'),
    _S(DEBUG, 'use_chrome_trace_format', 'boolean', True,
       'Trace in Chrome trace format (the only format supported).'),
    _S(DEBUG, 'graph_file', 'string', None,
       'Write the training graph (GraphDef text) to this file.'),
    # -- ours
    _S(HARNESS, 'result_dir', 'string', 'results/runs',
       'Folder for the machine-readable JSON record of this run ("" = none).'),
    _S(HARNESS, 'label', 'string', '',
       'Free-text label stored in the run record, to group runs by.'),
    _S(HARNESS, 'verbosity', 'integer', 0,
       '0: the report only; 1: TensorFlow warnings too; 2: everything '
       'TensorFlow logs (device creation, INFO).', lower_bound=0,
       upper_bound=2),
    _S(HARNESS, 'cluster_run_id', 'string', '',
       'Id shared by every task of one cluster run, stored in each task\'s '
       'run record (the launcher sets it).'),
    _S(HARNESS, 'startup_timeout', 'float', 300,
       'Seconds to wait for cluster peers at start-up (their ports, the '
       'session, the start barrier) before failing with exit code 4, naming '
       'them.', lower_bound=0),
    _S(HARNESS, 'stall_timeout', 'float', 300,
       'Seconds without a completed step anywhere in the cluster before '
       'every task prints a stall report (0: no stall detection).',
       lower_bound=0),
    _S(HARNESS, 'stall_shutdown_timeout', 'float', 60,
       'Seconds after a stall report before a task still stuck exits with '
       'code 3 (4 when a peer is unreachable); 0: report only.',
       lower_bound=0),
    _S(HARNESS, 'peak_gflops', 'float', None,
       'This machine\'s peak GFLOP/s for the model FLOP utilisation line. '
       'Default: measured once (a few seconds) per host, TensorFlow version '
       'and compute dtype, then cached in ~/.cache/tf_cnn_benchmarks/.',
       lower_bound=0),
    _S(HARNESS, 'measure_peak', 'boolean', False,
       'Measure the peak GFLOP/s again after the run and refresh the cache '
       '(e.g. after measuring it on a busy machine).'),
)

SPECS_BY_NAME = {s.name: s for s in FLAG_SPECS}

# Flags of the original tool this harness does not implement, with the
# reason. They parse, so a pasted command line gets a precise message
# instead of "unknown flag", and only a non-default value is an error.
UNSUPPORTED_FLAGS = {
    'trt_mode': 'TensorRT inference is GPU-only and not implemented',
    'gpu_thread_mode': 'GPU thread tuning does not apply (no GPU runtime)',
    'per_gpu_thread_count': 'GPU thread tuning does not apply',
    'gpu_memory_frac_for_testing': 'GPU memory tuning does not apply',
    'allow_growth': 'GPU memory tuning does not apply',
    'use_unified_memory': 'GPU memory tuning does not apply',
    'force_gpu_compatible': 'GPU memory tuning does not apply',
    'gpu_indices': 'GPU selection is done with CUDA_VISIBLE_DEVICES',
    'use_numa_affinity': 'NUMA binding is not implemented',
    'mkl': 'oneDNN (formerly MKL) is always on in TensorFlow 2.x CPU wheels',
    'fp16_loss_scale': 'loss scaling is not needed for bfloat16 on CPU',
    'fp16_vars': 'variables are always float32 master copies',
    'tfprof_file': 'use --trace_file for a Chrome trace',
    'debugger': 'tfdbg was removed from TensorFlow 2.x',
    'benchmark_log_dir': 'the JSON run record in --result_dir replaces it',
    'ml_perf': 'MLPerf compliance mode is not implemented',
    'horovod_device': 'the horovod mode is not implemented',
    'staged_vars': 'staged variables are not implemented',
    'use_resource_vars': 'variables are always resource variables',
    'hierarchical_copy': 'NVLink topology copies are GPU-only',
    'gradient_repacking': 'gradient repacking is not implemented',
    'use_python32_barrier': 'barriers are built in',
}

# Default values the unsupported flags must keep.
_UNSUPPORTED_DEFAULTS = {
    'trt_mode': '', 'gpu_thread_mode': 'gpu_private', 'per_gpu_thread_count': 0,
    'gpu_memory_frac_for_testing': 0.0, 'allow_growth': None,
    'use_unified_memory': None, 'force_gpu_compatible': False,
    'gpu_indices': '', 'use_numa_affinity': False, 'mkl': False,
    'fp16_loss_scale': None, 'fp16_vars': False,
    'tfprof_file': None, 'debugger': None,
    'benchmark_log_dir': None, 'ml_perf': False, 'horovod_device': '',
    'staged_vars': False, 'use_resource_vars': False,
    'hierarchical_copy': False, 'gradient_repacking': 0,
    'use_python32_barrier': False,
}
UNSUPPORTED_THEME = 'Original flags not implemented (accepted at their defaults)'


def define_flags(flag_values=absl_flags.FLAGS):
  """Registers every flag with absl, each under its theme for --help."""
  for s in FLAG_SPECS:
    kw = dict(flag_values=flag_values, module_name=s.theme)
    if s.kind == 'string':
      absl_flags.DEFINE_string(s.name, s.default, s.help, **kw)
    elif s.kind == 'boolean':
      absl_flags.DEFINE_boolean(s.name, s.default, s.help, **kw)
    elif s.kind == 'enum':
      absl_flags.DEFINE_enum(s.name, s.default, list(s.enum_values),
                             s.help, **kw)
    elif s.kind == 'integer':
      absl_flags.DEFINE_integer(s.name, s.default, s.help,
                                lower_bound=s.lower_bound,
                                upper_bound=s.upper_bound, **kw)
    elif s.kind == 'float':
      absl_flags.DEFINE_float(s.name, s.default, s.help,
                              lower_bound=s.lower_bound,
                              upper_bound=s.upper_bound, **kw)
    elif s.kind == 'list':
      absl_flags.DEFINE_list(s.name, s.default, s.help, **kw)
    else:
      raise ValueError('unknown flag kind %r' % s.kind)
  for name, default in _UNSUPPORTED_DEFAULTS.items():
    help_text = 'Not implemented: %s.' % UNSUPPORTED_FLAGS[name]
    kw = dict(flag_values=flag_values, module_name=UNSUPPORTED_THEME)
    if isinstance(default, bool) or default is None and name in (
        'allow_growth', 'use_unified_memory'):
      absl_flags.DEFINE_boolean(name, default, help_text, **kw)
    elif isinstance(default, int):
      absl_flags.DEFINE_integer(name, default, help_text, **kw)
    elif isinstance(default, float) or name == 'fp16_loss_scale':
      absl_flags.DEFINE_float(name, default, help_text, **kw)
    else:
      absl_flags.DEFINE_string(name, default, help_text, **kw)


def help_text(flag_values):
  """--help: every flag, grouped by theme in a fixed order."""
  lines = ['Usage: tf_cnn_benchmarks [--flag=value ...]',
           '       tf_cnn_benchmarks {build-dataset|compare|dashboard|suite|'
           'matrix|launch} --help', '']
  by_module = flag_values.flags_by_module_dict()
  for theme in THEMES + (UNSUPPORTED_THEME,):
    lines.append('%s:' % theme)
    for flag in sorted(by_module.get(theme, []), key=lambda f: f.name):
      default = 'none' if flag.default is None else flag.default_as_str
      lines.append('  --%s  (default: %s)' % (flag.name, default))
      lines.append('      %s' % flag.help)
    lines.append('')
  return '\n'.join(lines)


class Params(types.SimpleNamespace):
  """All settings of one run, read-only; modules read this, not flag globals.

  Attribute names are the flag names. ``replace(**changes)`` returns a
  modified copy (after validation).
  """

  def __setattr__(self, name, value):
    raise AttributeError('Params are read-only; use replace()')

  def replace(self, **changes):
    values = dict(vars(self))
    values.update(changes)
    return _build_params(values)

  def as_dict(self):
    return dict(vars(self))


def _build_params(values):
  params = Params.__new__(Params)
  params.__dict__.update(values)
  validate(params)
  return params


def default_values():
  values = {s.name: s.default for s in FLAG_SPECS}
  values.update(_UNSUPPORTED_DEFAULTS)
  return values


def make_params(**overrides):
  """Params with defaults for everything not given (for code and tests)."""
  values = default_values()
  unknown = sorted(set(overrides) - set(values))
  if unknown:
    raise UsageError('Unknown parameter(s): %s.' % ', '.join(unknown))
  for name, value in overrides.items():
    spec = SPECS_BY_NAME.get(name)
    if spec is not None:
      _check_value(spec, value)
  values.update(overrides)
  return _build_params(values)


def params_from_flags(flag_values):
  values = default_values()
  for name in values:
    values[name] = flag_values[name].value
  return _build_params(values)


def _check_value(spec, value):
  """The same per-value checks absl applies, for make_params callers."""
  if value is None:
    return
  if spec.kind == 'enum' and value not in spec.enum_values:
    raise UsageError('--%s=%r is not valid; allowed values: %s.' % (
        spec.name, value, ', '.join(v or "''" for v in spec.enum_values)))
  if spec.kind in ('integer', 'float'):
    if spec.lower_bound is not None and value < spec.lower_bound:
      raise UsageError('--%s=%r is too small; it must be >= %s.' % (
          spec.name, value, spec.lower_bound))
    if spec.upper_bound is not None and value > spec.upper_bound:
      raise UsageError('--%s=%r is too large; it must be <= %s.' % (
          spec.name, value, spec.upper_bound))


def is_cluster_task(p):
  """Is this process a task of a cluster (vs. a single-process run)?"""
  return bool(p.job_name or p.cluster_spec)


def validate(p):
  """Checks flag combinations that need no TensorFlow; raises UsageError."""
  for name, default in _UNSUPPORTED_DEFAULTS.items():
    if getattr(p, name) != default:
      raise UsageError(
          '--%s is a flag of the original tf_cnn_benchmarks that this '
          'harness does not implement (%s). Remove it from the command '
          'line.' % (name, UNSUPPORTED_FLAGS[name]))
  if p.num_batches is not None and p.num_epochs is not None:
    raise UsageError(
        '--num_batches and --num_epochs both set the run length; give only '
        'one of them.')
  if p.forward_only and p.eval:
    raise UsageError(
        '--forward_only and --eval are two different modes; --eval already '
        'runs forward passes only (on the checkpoint in --train_dir). Give '
        'one of them.')
  if p.eval and not p.train_dir:
    raise UsageError(
        '--eval evaluates the latest checkpoint in --train_dir, but no '
        '--train_dir was given. Train first with --train_dir=DIR, then run '
        '--eval --train_dir=DIR.')
  if p.data_name and p.data_dir is None and p.data_name not in (
      'imagenet', 'cifar10'):
    raise UsageError('--data_name must be imagenet or cifar10.')
  if p.input_only and (p.eval or p.forward_only):
    raise UsageError('--input_only measures the input pipeline alone; it '
                     'cannot be combined with --eval or --forward_only.')
  if p.input_only and p.data_dir is None:
    raise UsageError('--input_only measures a real input pipeline; give '
                     '--data_dir (synthetic data has no pipeline to '
                     'measure).')
  if p.all_reduce_spec and p.variable_update != 'replicated':
    raise UsageError(
        '--all_reduce_spec=%s only applies to --variable_update=replicated '
        '(it was %s).' % (p.all_reduce_spec, p.variable_update))
  if p.piecewise_learning_rate_schedule:
    parse_piecewise_schedule(p.piecewise_learning_rate_schedule)
    if p.init_learning_rate is not None:
      raise UsageError(
          '--piecewise_learning_rate_schedule already gives the initial '
          'learning rate; drop --init_learning_rate.')
  if (p.num_epochs_per_decay > 0) != (p.learning_rate_decay_factor > 0):
    raise UsageError(
        '--num_epochs_per_decay and --learning_rate_decay_factor go '
        'together: give both (exponential decay) or neither.')
  if p.batch_group_size > 1 and is_cluster_task(p):
    raise UsageError(
        '--batch_group_size=%d runs several steps per session.run in a '
        'single process only; a cluster task runs one step per call (its '
        'peers synchronise every step). Remove the flag.' %
        p.batch_group_size)
  if p.peak_gflops and p.measure_peak:
    raise UsageError('--peak_gflops gives the peak and --measure_peak '
                     'measures it; give only one of them.')
  _validate_evaluation_flags(p)
  _validate_summary_flags(p)
  _validate_cluster_flags(p)


# Any of these makes a run evaluate while it trains (evaluation.py).
EVAL_DURING_TRAINING_FLAGS = ('eval_during_training_every_n_steps',
                              'eval_during_training_every_n_epochs',
                              'eval_during_training_at_specified_steps',
                              'eval_during_training_at_specified_epochs')


def _check_numbers(p, name, kind):
  """A --name=a,b,c list flag whose entries must be ``kind`` >= 0."""
  try:
    if all(kind(v) >= 0 for v in getattr(p, name)):
      return
  except ValueError:
    pass
  raise UsageError('--%s=%s: expected a comma-separated list of %s >= 0, '
                   'e.g. %s.' % (name, ','.join(getattr(p, name)),
                                 'integers' if kind is int else 'numbers',
                                 '100,500' if kind is int else '0.5,1'))


def _validate_evaluation_flags(p):
  _check_numbers(p, 'eval_during_training_at_specified_steps', int)
  _check_numbers(p, 'eval_during_training_at_specified_epochs', float)
  during = [n for n in EVAL_DURING_TRAINING_FLAGS if getattr(p, n)]
  if during and (p.eval or p.forward_only or p.input_only):
    raise UsageError(
        '--%s evaluates while training; it cannot be combined with --eval, '
        '--forward_only or --input_only (which do not train).' % during[0])
  if during and is_cluster_task(p):
    raise UsageError(
        '--%s runs in a single process; in a cluster, evaluate the '
        'checkpoints the chief writes to --train_dir with a separate '
        '--eval --eval_interval_secs=N process.' % during[0])
  if p.stop_at_top_1_accuracy is not None and not during:
    raise UsageError(
        '--stop_at_top_1_accuracy needs evaluation during training: add '
        '--eval_during_training_every_n_steps=N (or _every_n_epochs, '
        '_at_specified_steps, _at_specified_epochs).')
  if p.eval_interval_secs and not p.eval:
    raise UsageError(
        '--eval_interval_secs=%d sets how often --eval looks for a newer '
        'checkpoint; add --eval (with --train_dir), or drop it.'
        % p.eval_interval_secs)


def _validate_summary_flags(p):
  if not p.summary_verbosity:
    return
  if is_cluster_task(p):
    raise UsageError(
        '--summary_verbosity writes TensorBoard summaries from a single '
        'process; drop it from cluster tasks (their run records hold every '
        'step time and loss).')
  if p.eval:
    return  # --eval writes accuracies to --eval_dir.
  if not p.train_dir:
    raise UsageError(
        '--summary_verbosity=%d writes TensorBoard summaries to --train_dir; '
        'give --train_dir=DIR.' % p.summary_verbosity)
  if not p.save_summaries_steps:
    raise UsageError(
        '--summary_verbosity=%d needs --save_summaries_steps=N: how often '
        'to write them.' % p.summary_verbosity)
  if p.batch_group_size > 1:
    raise UsageError(
        '--summary_verbosity fetches summaries with single steps; it cannot '
        'be combined with --batch_group_size=%d.' % p.batch_group_size)


def _validate_cluster_flags(p):
  """Cluster checks that need no host list (cluster/roles.py checks those)."""
  mode = modes.MODES.get(p.variable_update)
  if mode is None:  # horovod: an original value, refused with its reason
    raise UsageError(
        '--variable_update=%s is not implemented: Horovod\'s last release '
        'builds only against TensorFlow <= 2.18. For all-reduce across '
        'workers use --variable_update=collective_all_reduce (or '
        'distributed_all_reduce).' % p.variable_update)
  if not is_cluster_task(p):
    if not mode.runs_locally:
      raise UsageError(
          '--variable_update=%s runs across a cluster; it needs --job_name, '
          '--ps_hosts/--worker_hosts and --task_index, or --cluster_spec '
          '(or use one of %s on a single machine; `tf_cnn_benchmarks launch` '
          'starts a local cluster for you).' % (
              p.variable_update, ', '.join(modes.names(runs_locally=True))))
    return
  if not mode.runs_in_cluster:
    raise UsageError(
        '--variable_update=%s runs in a single process, but a cluster task '
        'was given (--job_name/--cluster_spec); in a cluster use one of %s.'
        % (p.variable_update, ', '.join(modes.names(runs_in_cluster=True))))
  if p.job_name and not (p.worker_hosts or p.cluster_spec):
    raise UsageError('--job_name=%s needs --worker_hosts (and --ps_hosts '
                     'for ps modes), or --cluster_spec.' % p.job_name)
  if p.server_protocol not in SERVER_PROTOCOLS:
    raise UsageError(
        '--server_protocol=%s is not a TensorFlow server protocol; known '
        'protocols: %s.' % (p.server_protocol, ', '.join(SERVER_PROTOCOLS)))
  if not p.cross_replica_sync and mode.all_reduce:
    raise UsageError(
        '--variable_update=%s is synchronous by construction (an all-reduce '
        'needs every worker); --cross_replica_sync=False applies to '
        'parameter_server and distributed_replicated.' % p.variable_update)
  if p.eval:
    raise UsageError(
        '--eval runs in a single process: evaluate the checkpoint the '
        'cluster\'s chief wrote to --train_dir with a plain run (no '
        '--job_name/--cluster_spec).')


def parse_piecewise_schedule(text):
  """'r0;e1;r1;...' -> (rates, boundaries_in_epochs); UsageError if bad."""
  parts = text.split(';')
  try:
    values = [float(x) for x in parts]
  except ValueError:
    values = None
  if values is None or len(parts) % 2 != 1:
    raise UsageError(
        '--piecewise_learning_rate_schedule=%r is not of the form '
        '"rate;epoch;rate;epoch;...;rate" (numbers separated by ";", odd '
        'count), e.g. "0.1;30;0.01;60;0.001".' % text)
  rates, bounds = values[0::2], values[1::2]
  if any(b2 <= b1 for b1, b2 in zip(bounds, bounds[1:])) or any(
      b <= 0 for b in bounds):
    raise UsageError('--piecewise_learning_rate_schedule=%r: epoch '
                     'boundaries must be positive and increasing.' % text)
  return rates, bounds


def parse_command_line(argv, flag_values=None):
  """Parses argv into Params; raises UsageError with a readable message."""
  flag_values = parse_flag_values(argv, flag_values)
  return params_from_flags(flag_values), flag_values


def parse_flag_values(argv, flag_values=None):
  """Parses argv into absl flag values, each checked alone; UsageError if bad.

  Checks across flags are Params' (validate); they depend on the process's
  place in a cluster, which the launcher decides from these values.
  """
  if flag_values is None:
    flag_values = absl_flags.FlagValues()
    define_flags(flag_values)
  try:
    leftover = flag_values(argv)[1:]
  except absl_flags.UnrecognizedFlagError as e:
    raise UsageError(
        'Unknown flag --%s. Run with --help for every flag, grouped by '
        'theme.' % e.flagname) from None
  except absl_flags.Error as e:
    raise UsageError('%s. Run with --help for the allowed values.' %
                     str(e).rstrip('.')) from None
  if leftover:
    raise UsageError(
        'Unexpected argument(s) %s: every setting is a --flag=value (e.g. '
        '--model=resnet50). Run with --help for the flags.' %
        ' '.join(leftover))
  return flag_values


def main_help_requested(argv):
  return any(a in ('--help', '-h', '--helpfull', '-help') for a in argv[1:])


def print_help(out=sys.stdout):
  fv = absl_flags.FlagValues()
  define_flags(fv)
  out.write(help_text(fv) + '\n')
