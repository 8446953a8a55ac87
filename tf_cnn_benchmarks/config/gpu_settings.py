"""The GPU runtime flags: which TensorFlow setting each one is, decided once.

The original handed these flags to TensorFlow in three ways, and so does
this harness, with the same names and values:

* environment variables its GPU runtime reads (TF_GPU_THREAD_MODE, ...):
  ``environment`` says which to set (or remove) and process/gpu_env.py sets
  them before TensorFlow loads, for both engines;
* ConfigProto fields of the graph engine's session (gpu_options.allow_growth,
  ...): ``config_proto_fields``, applied by run_config.session_config;
* the one the tf2 engine's runtime also has in tf.config, memory growth
  (engine_tf2/strategies.py); the ConfigProto-only ones are graph-engine
  flags there (flag_specs.GRAPH_ENGINE_ONLY).

Where no GPU is visible they change nothing: ``idle`` names those the user
set, for the run's one note, and ``describe`` is the run record's
``config.gpu_settings``.

No TensorFlow here: the environment is set before TensorFlow loads.
"""

from tf_cnn_benchmarks.config.flag_specs import SPECS_BY_NAME

# Flags whose setting only a GPU runtime reads (on a machine without one
# they have nothing to act on). --sync_on_finish is not among them: the
# graph engine's session (DirectSession) reads TF_SYNC_ON_FINISH whatever
# its devices, and --use_numa_affinity is a host setting.
GPU_ONLY_FLAGS = (
    'allow_growth', 'gpu_memory_frac_for_testing', 'force_gpu_compatible',
    'use_unified_memory', 'timestamped_allocator', 'gpu_kt_max_interval',
    'gpu_kt_max_bytes', 'gpu_kt_max_pending', 'gpu_indices',
    'gpu_thread_mode', 'per_gpu_thread_count', 'winograd_nonfused',
    'batchnorm_persistent', 'autotune_threshold')

# The original's GPU host threads when --per_gpu_thread_count is 0: one
# launches kernels, one copies memory.
DEFAULT_PER_GPU_THREADS = 2


def _on_gpu_flag(params):
  """The original set the GPU thread variables when --device said gpu (the
  flag, not what the machine has)."""
  return params.device.lower() == 'gpu'


def gpu_thread_count(params):
  """TF_GPU_THREAD_COUNT's value, or None when the mode sets none."""
  per_gpu = params.per_gpu_thread_count or DEFAULT_PER_GPU_THREADS
  if params.gpu_thread_mode == 'gpu_private':
    return per_gpu
  if params.gpu_thread_mode == 'gpu_shared':
    return per_gpu * params.num_gpus
  return None


def environment(params):
  """{variable: value, or None for "removed"}: the TF_* variables the
  original set from these flags, in its words."""
  env = {
      'TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT':
          '1' if params.batchnorm_persistent else None,
      'TF_ENABLE_WINOGRAD_NONFUSED':
          '1' if params.winograd_nonfused else None,
      'TF_SYNC_ON_FINISH': str(int(params.sync_on_finish)),
  }
  if params.autotune_threshold:
    env['TF_AUTOTUNE_THRESHOLD'] = str(params.autotune_threshold)
  if _on_gpu_flag(params):
    env['TF_GPU_THREAD_MODE'] = params.gpu_thread_mode
    count = gpu_thread_count(params)
    if count is not None:
      env['TF_GPU_THREAD_COUNT'] = str(count)
  return env


# flag -> the variables its value is in (for idle's words and the tests).
FLAG_VARIABLES = {
    'batchnorm_persistent': ('TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT',),
    'winograd_nonfused': ('TF_ENABLE_WINOGRAD_NONFUSED',),
    'sync_on_finish': ('TF_SYNC_ON_FINISH',),
    'autotune_threshold': ('TF_AUTOTUNE_THRESHOLD',),
    'gpu_thread_mode': ('TF_GPU_THREAD_MODE', 'TF_GPU_THREAD_COUNT'),
    'per_gpu_thread_count': ('TF_GPU_THREAD_COUNT',),
}


def config_proto_fields(params):
  """{ConfigProto field path: value} the original set from these flags
  (a field at its proto default is left unset, as the original left it)."""
  fields = {}

  def put(flag, path, value=None):
    given = getattr(params, flag)
    if given not in (None, False, 0, '', 0.0):
      fields[path] = given if value is None else value
  put('force_gpu_compatible', 'gpu_options.force_gpu_compatible')
  put('gpu_indices', 'gpu_options.experimental.collective_ring_order')
  put('use_numa_affinity', 'experimental.use_numa_affinity')
  if params.allow_growth is not None:
    # Given at all, True or False, the original wrote it.
    fields['gpu_options.allow_growth'] = params.allow_growth
  put('gpu_memory_frac_for_testing',
      'gpu_options.per_process_gpu_memory_fraction')
  put('use_unified_memory', 'gpu_options.experimental.use_unified_memory')
  put('timestamped_allocator',
      'gpu_options.experimental.timestamped_allocator')
  put('gpu_kt_max_interval',
      'gpu_options.experimental.kernel_tracker_max_interval')
  put('gpu_kt_max_bytes', 'gpu_options.experimental.kernel_tracker_max_bytes')
  put('gpu_kt_max_pending',
      'gpu_options.experimental.kernel_tracker_max_pending')
  return fields


def set_field(config, path, value):
  """Sets the ConfigProto field at dotted ``path`` (e.g.
  'gpu_options.allow_growth') to ``value``."""
  *parents, name = path.split('.')
  message = config
  for parent in parents:
    message = getattr(message, parent)
  setattr(message, name, value)


def changed_flags(params, names):
  return [n for n in names
          if getattr(params, n) != SPECS_BY_NAME[n].default]


def idle(params, has_gpu):
  """The GPU-only flags the user changed that have nothing to act on in
  this run (no GPU visible); [] on a machine with one."""
  return [] if has_gpu else changed_flags(params, GPU_ONLY_FLAGS)


def idle_note(flag_names):
  """The run's one note about them, or None."""
  if not flag_names:
    return None
  return ('No GPU is visible, so %s %s passed to TensorFlow as the original '
          'did but %s nothing to act on here (the run record\'s '
          'config.gpu_settings holds what was set).' % (
              ', '.join('--' + n for n in flag_names),
              'is' if len(flag_names) == 1 else 'are',
              'has' if len(flag_names) == 1 else 'have'))


def describe(params, has_gpu, environ):
  """The run record's ``config.gpu_settings``: the variables as this
  process has them (``environ``), the session's fields, and which flags
  had nothing to act on."""
  return {
      'environment': {name: environ.get(name)
                      for name in sorted(environment(params))},
      'config_proto': config_proto_fields(params),
      'memory_growth': params.allow_growth,
      'gpus_visible': has_gpu,
      'idle_flags': idle(params, has_gpu),
  }
