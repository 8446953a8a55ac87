"""The table of every command-line flag, grouped by theme.

Flag names and defaults are the original tool's (users' scripts type them); the
harness's own additions are in the last theme, and the original's flags this
harness refuses are in a theme of their own. A row is everything about its
flag: config/flags.py defines the absl flags from it and fills ``make_params``
defaults from it; config/flag_checks.py refuses from it.

No TensorFlow here: flags are parsed before TensorFlow loads.
"""

import dataclasses
from typing import Any, Optional, Sequence, Tuple

from tf_cnn_benchmarks.variable_update import modes


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
  # Why the harness refuses this original flag; None for a flag it runs.
  refused: Optional[str] = None
  # Values the original accepted that the harness refuses: (value,
  # reason) pairs. They parse, so the user gets the reason; --help does not
  # offer them.
  refused_values: Tuple[Tuple[str, str], ...] = ()


MODEL = 'Model & run mode'
BATCH = 'Batch size, run length & console reporting'
DEVICES = 'Devices & threading'
GPU = 'GPU runtime settings (handed to TensorFlow as the original did)'
DATA = 'Input data & preprocessing'
OPTIMIZER = 'Optimizer, learning rate & loss'
VARIABLES = 'Variable management & gradient aggregation'
CLUSTER = 'Distributed (multi-process / multi-host)'
PRECISION = 'Precision, compilation & graph options'
CHECKPOINTS = 'Checkpoints'
DEBUG = 'Debugging & profiling'
HARNESS = 'Results, logging & fault handling (this harness)'

THEMES = (MODEL, BATCH, DEVICES, GPU, DATA, OPTIMIZER, VARIABLES, CLUSTER,
          PRECISION, CHECKPOINTS, DEBUG, HARNESS)

# What each mode is, and where it runs: variable_update/modes.py.
VARIABLE_UPDATES = tuple(modes.MODES)
# Protocols TensorFlow servers have had; which ones this build has is
# checked at start-up (cluster/server.check_protocol).
SERVER_PROTOCOLS = ('grpc', 'grpc+verbs', 'grpc+mpi', 'grpc+gdr')

# --engine: the tf.compat.v1 session driver, or TensorFlow 2's own path
# (tf_cnn_benchmarks/engine_tf2/).
GRAPH_ENGINE, TF2_ENGINE = 'graph', 'tf2'
ENGINES = (GRAPH_ENGINE, TF2_ENGINE)
# Flags only the graph engine runs: flag -> what it does, for the error a
# tf2 run with a non-default value gets. Everything else (model, batch, run
# length, devices, data, sgd/momentum and the learning-rate schedule, weight
# decay, precision, seeds, results) means the same in both engines.
GRAPH_ENGINE_ONLY = {
    'eval': 'evaluating a checkpoint',
    'forward_only': 'forward-only (inference) runs',
    'input_only': 'timing the input pipeline alone',
    'print_training_accuracy': 'training accuracy columns',
    'freeze_when_forward_only': 'frozen forward-only graphs',
    'backbone_model_path': 'restoring backbone weights',
    'batch_group_size': 'several steps per session.run',
    'train_dir': 'checkpoints',
    'summary_verbosity': 'TensorBoard summaries',
    'trace_file': 'step traces',
    'tfprof_file': 'tfprof profiles',
    'partitioned_graph_file_prefix': 'partitioned graph dumps',
    'graph_file': 'graph dumps',
    'benchmark_log_dir': "the official models' benchmark logs",
    'all_reduce_spec': "the replicated mode's all-reduce algorithms",
    'agg_small_grads_max_bytes': 'gradient packing',
    'gradient_repacking': 'gradient packing',
    'rewriter_config': 'a custom Grappler configuration',
    'enable_optimizations': 'turning graph optimisations off',
    'compute_lr_on_cpu': 'placing the learning rate on the CPU',
    'sparse_to_dense_grads': 'densifying sparse gradients',
    'variable_consistency': 'deferring gradients by a step (relaxed)',
    'hierarchical_copy': "the replicated mode's hierarchical copies",
    # ConfigProto fields and the session's own variable: TensorFlow 2's
    # runtime takes no ConfigProto, and tf.config has none of these (it
    # caps GPU memory in MB per logical device, not as a fraction).
    'gpu_memory_frac_for_testing': 'a per-process GPU memory fraction '
                                   '(ConfigProto)',
    'use_unified_memory': 'unified GPU memory (ConfigProto)',
    'force_gpu_compatible': 'pinned host tensors (ConfigProto)',
    'timestamped_allocator': 'the timestamped GPU allocator (ConfigProto)',
    'gpu_kt_max_interval': 'the GPU kernel tracker (ConfigProto)',
    'gpu_kt_max_bytes': 'the GPU kernel tracker (ConfigProto)',
    'gpu_kt_max_pending': 'the GPU kernel tracker (ConfigProto)',
    'gpu_indices': 'the collective ring order (ConfigProto) and xring\'s '
                   'tower order',
    'use_numa_affinity': 'NUMA affinity (ConfigProto)',
    'sync_on_finish': 'TF_SYNC_ON_FINISH, which only tf.compat.v1 '
                      'sessions read',
}

# Not in THEMES: --help lists it last, after every theme that runs.
REFUSED = 'Original flags not implemented (accepted at their defaults)'


def _refused(name, kind, default, reason, **kw):
  """An original flag that still parses, so a pasted command line gets the
  reason instead of "unknown flag"; only a non-default value is an error."""
  return FlagSpec(REFUSED, name, kind, default, 'Not implemented: %s.' % reason,
                  refused=reason, **kw)


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
    _S(MODEL, 'freeze_when_forward_only', 'boolean', False,
       'With --forward_only: turn every variable into a constant before the '
       'timed steps (the frozen graph reads no variables). Not with '
       '--train_dir or in a cluster.'),
    _S(MODEL, 'backbone_model_path', 'string', None,
       'Before training, restore the variables this checkpoint (a file '
       'prefix or a folder) has with the same name and shape as the model\'s '
       '(e.g. a pre-trained backbone); the others keep their initial values. '
       'An error if none match. Skipped when a --train_dir checkpoint is '
       'restored (it holds the trained weights).'),
    _S(MODEL, 'use_tf_layers', 'boolean', True,
       'The original\'s switch between tf.layers and its own layer code, '
       'which computed the same thing. Models here always use their own '
       'layer builder (models/layers.py: Keras 3 has no tf.layers), so both '
       'values build the same graph; accepted for old command lines.'),
    # -- batch & reporting
    _S(BATCH, 'batch_size', 'integer', 0,
       'Batch size per device (tower); 0 means the model\'s default.',
       lower_bound=0),
    _S(BATCH, 'eval_batch_size', 'integer', 0,
       'Per-device batch size of --eval and of evaluation during training; '
       '0 means --batch_size.',
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
       'Steps of one evaluation. Default: --num_batches with --eval; one '
       'epoch of the validation set (or --num_eval_epochs) for evaluation '
       'during training.', lower_bound=1),
    _S(BATCH, 'num_epochs', 'float', None,
       'Run length in epochs of the dataset (excludes --num_batches).',
       lower_bound=0),
    _S(BATCH, 'num_eval_epochs', 'float', None,
       'Eval length in epochs of the validation set.', lower_bound=0),
    _S(BATCH, 'num_warmup_batches', 'integer', None,
       'Untimed steps before timing starts; default 10.', lower_bound=0),
    _S(BATCH, 'display_every', 'integer', 10,
       'Print a step line every this many timed steps.', lower_bound=1),
    _S(BATCH, 'display_perf_ewma', 'float', None,
       'Show the step rows\' images/sec as an exponentially weighted moving '
       'average of the step times, the newest step weighted by this (0..1), '
       'instead of their mean; the total and the record are unchanged.',
       lower_bound=0, upper_bound=1),
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
    _S(DEVICES, 'tune_malloc', 'boolean', True,
       'glibc malloc keeps the memory a step frees for the next step '
       '(trim threshold 1 GiB, mmap threshold 32 MiB, top pad 64 MiB) '
       'instead of returning it to the kernel and faulting it back in '
       'every step; set before TensorFlow loads, a MALLOC_*_ or '
       'GLIBC_TUNABLES setting of your own is kept. False: the C '
       'library\'s defaults, as the original ran. Not in the original\'s '
       'flags.'),
    _S(DEVICES, 'kmp_blocktime', 'integer', 0,
       'Sets KMP_BLOCKTIME (ms an OpenMP thread spins after a parallel '
       'region) before TensorFlow loads. Only matters for OpenMP (Intel MKL) '
       'builds of TensorFlow; at its default, a value already in the '
       'environment is kept.'),
    _S(DEVICES, 'kmp_affinity', 'string',
       'granularity=fine,verbose,compact,1,0',
       'Sets KMP_AFFINITY (OpenMP thread pinning) before TensorFlow loads. '
       'Only matters for OpenMP (Intel MKL) builds; at its default, a value '
       'already in the environment is kept.'),
    _S(DEVICES, 'kmp_settings', 'integer', 1,
       'Sets KMP_SETTINGS (1: OpenMP prints its settings) before TensorFlow '
       'loads. Only matters for OpenMP (Intel MKL) builds; at its default, a '
       'value already in the environment is kept.'),
    # -- GPU runtime settings: each is a TensorFlow setting
    # (config/gpu_settings.py says which); without a GPU they are set all
    # the same and the run notes that they had nothing to act on.
    _S(GPU, 'allow_growth', 'boolean', None,
       'ConfigProto gpu_options.allow_growth (tf2 engine: '
       'tf.config.experimental.set_memory_growth on every GPU): TensorFlow '
       'takes GPU memory as it needs it instead of nearly all at start.'),
    _S(GPU, 'gpu_memory_frac_for_testing', 'float', 0.0,
       'If > 0, ConfigProto gpu_options.per_process_gpu_memory_fraction: '
       'the fraction of each GPU\'s memory TensorFlow may take (above 1 '
       'with --use_unified_memory to oversubscribe).', lower_bound=0),
    _S(GPU, 'use_unified_memory', 'boolean', None,
       'ConfigProto gpu_options.experimental.use_unified_memory: GPU memory '
       'backed by CUDA unified memory, so a model larger than the GPU fits.'),
    _S(GPU, 'force_gpu_compatible', 'boolean', False,
       'ConfigProto gpu_options.force_gpu_compatible: host tensors in '
       'pinned memory, for faster copies to the GPU.'),
    _S(GPU, 'timestamped_allocator', 'boolean', False,
       'ConfigProto gpu_options.experimental.timestamped_allocator: freed '
       'GPU memory chunks marked with the time they were freed.'),
    _S(GPU, 'gpu_kt_max_interval', 'integer', 0,
       'If > 0, ConfigProto gpu_options.experimental.'
       'kernel_tracker_max_interval: GPU ops queued in a row before a '
       'tracking event.', lower_bound=0),
    _S(GPU, 'gpu_kt_max_bytes', 'integer', 0,
       'If > 0, ConfigProto gpu_options.experimental.'
       'kernel_tracker_max_bytes: GPU memory allocated by queued ops before '
       'a tracking event.', lower_bound=0),
    _S(GPU, 'gpu_kt_max_pending', 'integer', 0,
       'If > 0, ConfigProto gpu_options.experimental.'
       'kernel_tracker_max_pending: tracking events outstanding before '
       'kernel launches wait.', lower_bound=0),
    _S(GPU, 'gpu_indices', 'string', '',
       'Indices of the GPUs in ring order, e.g. 0,2,1,3: ConfigProto '
       'gpu_options.experimental.collective_ring_order (collective ops\' '
       'ring), and the order of the towers in --all_reduce_spec=xring\'s '
       'ring.'),
    _S(GPU, 'gpu_thread_mode', 'enum', 'gpu_private',
       'With --device=gpu, TF_GPU_THREAD_MODE: which host threads launch '
       'GPU kernels (global: TensorFlow\'s shared pool; gpu_private: a '
       'pool per GPU; gpu_shared: one pool for all GPUs). On a GPU the '
       'pools\' threads are taken from --num_inter_threads and the input '
       'pipeline\'s private threads when those are not given, as the '
       'original did.',
       enum_values=('gpu_private', 'gpu_shared', 'global')),
    _S(GPU, 'per_gpu_thread_count', 'integer', 0,
       'Threads per GPU of --gpu_thread_mode\'s pools (TF_GPU_THREAD_COUNT; '
       'gpu_shared: this times --num_gpus); 0 means 2.', lower_bound=0),
    _S(GPU, 'winograd_nonfused', 'boolean', True,
       'TF_ENABLE_WINOGRAD_NONFUSED=1 (False: unset): cuDNN may use its '
       'non-fused Winograd convolutions.'),
    _S(GPU, 'batchnorm_persistent', 'boolean', True,
       'TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1 (False: unset): '
       'cuDNN\'s persistent spatial batch norm.'),
    _S(GPU, 'autotune_threshold', 'integer', None,
       'TF_AUTOTUNE_THRESHOLD: how many times cuDNN autotunes a '
       'convolution; the default warm-up grows to max(10, 5 x this^2) '
       'steps, as the original\'s. Unset or 0: cuDNN\'s own.',
       lower_bound=0),
    _S(GPU, 'sync_on_finish', 'boolean', False,
       'TF_SYNC_ON_FINISH: the graph engine\'s session waits for every '
       'device to finish at the end of each step.'),
    _S(DEVICES, 'use_numa_affinity', 'boolean', False,
       'ConfigProto experimental.use_numa_affinity: TensorFlow places its '
       'threads and memory by NUMA node where the platform supports it.'),
    # -- data
    _S(DATA, 'data_dir', 'string', None,
       'Folder of the dataset; without it the run uses synthetic data.'),
    _S(DATA, 'data_name', 'enum', None,
       'Dataset: imagenet or cifar10. Default: cifar10 when --data_dir '
       'holds CIFAR-10 batches, else from the model (imagenet unless only a '
       'CIFAR-10 form exists).',
       enum_values=('imagenet', 'cifar10')),
    _S(DATA, 'resize_method', 'enum', 'bilinear',
       'Image resize method for real data; round_robin cycles through '
       'bilinear, nearest, bicubic and area by position in the input stream.',
       enum_values=('bilinear', 'nearest', 'bicubic', 'area', 'round_robin')),
    _S(DATA, 'distortions', 'boolean', False,
       'Add colour distortions to training images.'),
    _S(DATA, 'distort_color_in_yiq', 'boolean', True,
       'With --distortions: shift hue and saturation in YIQ space (a '
       'rotation and scaling of the chroma plane) instead of with the '
       'RGB/HSV ops.'),
    # The original's only pipeline here is tf.data (True); False, its
    # RecordInput queue path, is refused in flag_checks.validate.
    _S(DATA, 'use_datasets', 'boolean', True,
       'Read input with tf.data (the only pipeline; False is refused).'),
    # A string, as in the original; flag_checks.validate names the choices.
    _S(DATA, 'input_preprocessor', 'string', 'default',
       'Preprocessing of the images: default (the only one implemented).'),
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
       'Shards read in parallel; default: 10, as the original.',
       lower_bound=1),
    _S(DATA, 'datasets_sloppy_parallel_interleave', 'boolean', False,
       'Training reads from whichever shard is ready first (faster, not '
       'reproducible).'),
    _S(DATA, 'datasets_parallel_interleave_prefetch', 'integer', None,
       'Shards opened ahead of the interleave needing them; default: '
       'twice the cycle length.', lower_bound=1),
    _S(DATA, 'datasets_repeat_cached_sample', 'boolean', False,
       'Read one record and repeat it forever (preprocessing still runs): '
       'the input pipeline at memory speed, without disk reads.'),
    _S(DATA, 'multi_device_iterator_max_buffer_size', 'integer', 1,
       'With --datasets_use_prefetch: batches a multi-device iterator '
       'holds on the host for each tower.', lower_bound=1),
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
    _S(OPTIMIZER, 'resnet_base_lr', 'float', None,
       'Base learning rate of the ImageNet ResNet models per 256 images: '
       'their default rate becomes this x global batch / 256. (The original '
       'also divided it by --num_gpus in replicated mode, whose towers\' '
       'gradients it summed; here they are averaged.) Ignored with '
       '--init_learning_rate or a piecewise schedule.',
       lower_bound=0),
    _S(OPTIMIZER, 'single_l2_loss_op', 'boolean', False,
       'Weight decay as one L2 loss over all weights concatenated instead of '
       'one per weight (same value, fewer ops).'),
    _S(OPTIMIZER, 'compute_lr_on_cpu', 'boolean', False,
       'Place the learning-rate computation on the CPU (can help XLA).'),
    _S(OPTIMIZER, 'sparse_to_dense_grads', 'boolean', False,
       'Turn sparse gradients (IndexedSlices, e.g. of embedding lookups) '
       'into dense tensors before the optimizer applies them.'),
    # -- variables
    _S(VARIABLES, 'variable_update', 'enum', 'parameter_server',
       'How variables are placed and gradients combined.',
       enum_values=VARIABLE_UPDATES,
       refused_values=(('horovod', (
           'Horovod\'s last release builds only against TensorFlow <= 2.18; '
           'for all-reduce across workers use --variable_update='
           'collective_all_reduce (or distributed_all_reduce)')),)),
    _S(VARIABLES, 'all_reduce_spec', 'string', None,
       'In-graph gradient all-reduce of replicated mode, in the original\'s '
       'grammar: alg[#shards][:size:alg[#shards]...], the size in elements '
       '(k/M suffixes: powers of 1024). Runs here: "spread" (each gradient '
       'summed on a tower chosen round-robin; the default), "pscpu" and '
       '"pscpu/pscpu" (summed on the CPU, #N: in N shards), "xring" (a ring '
       'across the towers, #2: two rings), "psgpu" (GPU towers only), and '
       'size ranges such as pscpu:32k:xring; "nccl" (TensorFlow\'s NCCL '
       'all-reduce, GPU towers only; nccl/xring, nccl/rechd and nccl/pscpu '
       'are NCCL too in one process, whose second level has one worker); '
       '"collective" goes with --variable_update=collective_all_reduce.'),
    _S(VARIABLES, 'agg_small_grads_max_bytes', 'integer', 0,
       'If > 0, replicated mode concatenates runs of consecutive gradients '
       'of at most this many bytes into one tensor before the all-reduce, '
       'and splits them after.', lower_bound=0),
    _S(VARIABLES, 'agg_small_grads_max_group', 'integer', 10,
       'At most this many small gradients per concatenated tensor '
       '(--agg_small_grads_max_bytes).', lower_bound=0),
    _S(VARIABLES, 'allreduce_merge_scope', 'integer', 1,
       'Replicated mode builds the all-reduce of this many consecutive '
       'gradients under one "allreduce" name scope, as the original grouped '
       'them; 0 means 1. Only op names change: nothing turns on '
       'TensorFlow\'s ScopedAllocator (the original did so for '
       'collective_all_reduce on GPUs only), so the buffers, the arithmetic '
       'and the speed are the same at any value (accepted for old command '
       'lines).', lower_bound=0),
    _S(VARIABLES, 'gradient_repacking', 'integer', 0,
       'If > 0, replicated mode concatenates all of a tower\'s gradients '
       'and cuts them into this many chunks, all-reduces the chunks, then '
       'restores the gradients.', lower_bound=0),
    _S(VARIABLES, 'compact_gradient_transfer', 'boolean', True,
       'With --use_fp16, replicated mode casts gradients to the compute '
       'dtype (bfloat16 on CPU, float16 on GPU) for the all-reduce and back '
       'after it.'),
    _S(VARIABLES, 'variable_consistency', 'enum', 'strong',
       'strong: a step applies its own gradients. relaxed: it applies the '
       'previous step\'s (zeros at the first step), so the all-reduce '
       '(replicated) or the push to the ps (distributed_replicated) need not '
       'wait for this step\'s backward pass; updates show up one step late.',
       enum_values=('strong', 'relaxed')),
    _S(VARIABLES, 'hierarchical_copy', 'boolean', False,
       'Replicated mode sums each gradient in two halves of the towers, '
       'each on a main tower of its half, then the two sums on one of '
       'them, and copies the mean back through the two main towers (the '
       'original\'s copies along a DGX-1\'s NVLink cliques; main towers '
       'by --network_topology). Needs an even --num_gpus > 1; runs on CPU '
       'towers too.'),
    _S(VARIABLES, 'network_topology', 'enum', 'dgx1',
       'How --hierarchical_copy picks the two main towers of gradient i: '
       'dgx1: towers i and i + N/2 (mod N); gcp_v100 (8 towers only): the '
       'pairs 0-5, 2-7, 5-0, 7-2 in turn.', enum_values=('dgx1', 'gcp_v100')),
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
    _S(CLUSTER, 'sync_updates', 'enum', 'mean',
       'How a synchronous ps-mode cluster (parameter_server, '
       'distributed_replicated) updates: "mean" applies the mean of every '
       'worker\'s gradient once per step (true synchronous SGD, one '
       'global step per cluster step); "barrier" is the original tool\'s: '
       'each worker applies its own gradient, then all meet at a barrier '
       '(N updates and N global steps per cluster step). Not in the '
       'original\'s flags; there the behaviour was always "barrier".',
       enum_values=('mean', 'barrier')),
    _S(CLUSTER, 'cluster_spec', 'string', None,
       'A JSON file describing the cluster instead of --ps_hosts/'
       '--worker_hosts/--controller_host: {"ps": [...], "worker": [...]}, '
       'or the TF_CONFIG form {"cluster": {...}, "task": {"type": ..., '
       '"index": ...}} (whose task sets --job_name/--task_index).'),
    # -- precision
    _S(PRECISION, 'use_fp16', 'boolean', False,
       'Half-precision compute with float32 master weights: float16 on GPU, '
       'bfloat16 on CPU (--fp16_dtype chooses).'),
    _S(PRECISION, 'fp16_dtype', 'enum', 'auto',
       'With --use_fp16, the half-precision type of compute: auto is '
       'float16 on a GPU (the original\'s) and bfloat16 on a CPU (which '
       'has fast bfloat16 kernels and needs no loss scaling); float16 runs '
       'on a CPU too, slowly, computing what a GPU run computes. Not in the '
       'original\'s flags.', enum_values=('auto', 'float16', 'bfloat16')),
    _S(PRECISION, 'fp16_loss_scale', 'float', None,
       'With --use_fp16, training multiplies the loss by this before the '
       'gradients and divides the gradients by it after (float16\'s small '
       'gradients would flush to zero otherwise). Default: 128 with '
       'float16, none (1) with bfloat16; the initial scale with '
       '--fp16_enable_auto_loss_scale.'),
    _S(PRECISION, 'fp16_enable_auto_loss_scale', 'boolean', False,
       'With --use_fp16, adjust the loss scale as training goes: a step '
       'with a non-finite gradient is skipped (the weights stay as they '
       'were) and halves the scale; after --fp16_inc_loss_scale_every_n '
       'good steps in a row the next good one doubles it.'),
    _S(PRECISION, 'fp16_inc_loss_scale_every_n', 'integer', 1000,
       'Good steps (finite gradients) with --fp16_enable_auto_loss_scale '
       'before the scale doubles.', lower_bound=1),
    _S(PRECISION, 'fp16_vars', 'boolean', False,
       'With --use_fp16, keep the weights of convolutions and dense layers '
       'in the half-precision type too (their gradients and optimizer '
       'slots follow); batch norm\'s stay float32. Default: float32 '
       'weights, cast when read.'),
    _S(PRECISION, 'xla_compile', 'boolean', False,
       'Compile the model with XLA.'),
    _S(PRECISION, 'xla', 'boolean', False,
       'Same as --xla_compile (the original\'s auto-clustering switch).'),
    _S(PRECISION, 'tf_random_seed', 'integer', 1234,
       'Seed of every random op, so two runs (and two variable_update modes) '
       'start from the same weights and data.'),
    _S(PRECISION, 'enable_optimizations', 'boolean', True,
       'Grappler graph optimizations; False turns them (and the classic '
       'graph optimizer) off in the session config.'),
    _S(PRECISION, 'rewriter_config', 'string', None,
       'A RewriterConfig in protobuf text format (e.g. "constant_folding: '
       'OFF") replacing the session\'s graph rewrite options.'),
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
       'Write --trace_file as a Chrome trace; False: the raw StepStats '
       'protobuf in text format.'),
    _S(DEBUG, 'tfprof_file', 'string', None,
       'Profile one extra (untimed) step with TensorFlow\'s profiler and '
       'write its ProfileProto (op times, memory, parameters) to this file; '
       'the most time-consuming ops are printed too.'),
    _S(DEBUG, 'partitioned_graph_file_prefix', 'string', None,
       'Write each device\'s graph after partitioning and optimization to '
       'PREFIX<device>[.ext] (text if PREFIX ends in "txt", else binary).'),
    _S(DEBUG, 'benchmark_log_dir', 'string', None,
       'Also write the official models\' benchmark logger files here: '
       'benchmark_run.log (run info, JSON) and metric.log (JSON lines of '
       'images/sec and accuracies), for dashboards built on them.'),
    _S(DEBUG, 'benchmark_test_id', 'string', None,
       'An id of this benchmark (e.g. its key parameters) stored in the run '
       'record and benchmark_run.log, to compare runs of one test.'),
    _S(DEBUG, 'graph_file', 'string', None,
       'Write the training graph (GraphDef text) to this file.'),
    _S(DEBUG, 'ml_perf_compliance_logging', 'boolean', False,
       'Write the MLPerf log (:::MLLOG lines of MLPerf\'s resnet benchmark, '
       'with the mlperf-logging package) to the console and to '
       '--ml_perf_log_file: a ResNet training run with '
       '--stop_at_top_1_accuracy. See README, "MLPerf logs".'),
    _S(DATA, 'ml_perf', 'boolean', False,
       'The original\'s MLPerf mode of the ImageNet input: random crops '
       'ignore the records\' bounding boxes, and images are centred on the '
       'channel means (each channel minus its ImageNet mean, no scaling) '
       'instead of scaled to [-1, 1].'),
    # -- ours
    _S(HARNESS, 'result_dir', 'string', 'results/runs',
       'Folder for the machine-readable JSON record of this run ("" = none).'),
    _S(HARNESS, 'label', 'string', '',
       'Free-text label stored in the run record, to group runs by.'),
    _S(HARNESS, 'ml_perf_log_file', 'string', None,
       'Where --ml_perf_compliance_logging writes its log. Default: '
       'mlperf_<run id>.log in --result_dir (the working directory when '
       'that is "").'),
    _S(HARNESS, 'ml_perf_submission_org', 'string', 'tf_cnn_benchmarks',
       'The MLPerf log\'s submission_org.'),
    _S(HARNESS, 'ml_perf_submission_platform', 'string', '',
       'The MLPerf log\'s submission_platform. Default: this machine\'s '
       'CPU (or accelerator), the device count and the engine.'),
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
    _S(HARNESS, 'engine', 'enum', 'graph',
       'Which TensorFlow runtime trains: graph (tf.compat.v1 sessions, as '
       'the original tool) or tf2 (the same models in a tf.function step '
       'under a tf.distribute strategy: the default strategy on one device, '
       'MirroredStrategy for --num_gpus=N --variable_update=replicated; in '
       'a cluster MultiWorkerMirroredStrategy for the all-reduce modes, '
       'ParameterServerStrategy for asynchronous parameter_server). '
       'The tf2 engine runs a subset of the flags (see README).',
       enum_values=ENGINES),
    _S(HARNESS, 'peak_gflops', 'float', None,
       'This machine\'s peak GFLOP/s for the model FLOP utilisation line. '
       'Default: measured once (a few seconds) per host, TensorFlow version '
       'and compute dtype, then cached in ~/.cache/tf_cnn_benchmarks/.',
       lower_bound=0),
    _S(HARNESS, 'measure_peak', 'boolean', False,
       'Measure the peak GFLOP/s again after the run and refresh the cache '
       '(e.g. after measuring it on a busy machine).'),
    # -- the original's flags this harness refuses; kinds and defaults are
    # the original's, so its command lines parse the same way
    _refused('trt_mode', 'enum', '',
             'TF-TRT needs TensorRT, which TensorFlow\'s pip builds dropped '
             'in 2.18 ("TensorRT support is disabled in CUDA builds"); this '
             'harness does not build it for the older ones',
             enum_values=('', 'FP32', 'FP16', 'INT8')),
    _refused('mkl', 'boolean', False,
             'oneDNN (formerly MKL) is TensorFlow 2.x\'s own switch: '
             'TF_ENABLE_ONEDNN_OPTS=1 turns it on (on by default on CPUs '
             'with AVX-512 VNNI, BF16 or AMX)'),
    _refused('debugger', 'string', None,
             'tfdbg was removed from TensorFlow 2.x'),
    _refused('horovod_device', 'string', '',
             'it places --variable_update=horovod\'s all-reduce, and '
             'Horovod\'s last release builds only against TensorFlow <= '
             '2.18'),
    _refused('staged_vars', 'boolean', False,
             'staged variables are not implemented'),
    _refused('use_resource_vars', 'boolean', False,
             'variables are always resource variables'),
    _refused('use_python32_barrier', 'boolean', False,
             'barriers are built in'),
    _refused('trt_max_workspace_size_bytes', 'integer', 4294967296,
             'it sizes TF-TRT\'s workspace for --trt_mode, which is refused'),
)

SPECS_BY_NAME = {s.name: s for s in FLAG_SPECS}
REFUSED_SPECS = tuple(s for s in FLAG_SPECS if s.refused)
