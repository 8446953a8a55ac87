"""Checks of flag values and combinations that need no TensorFlow.

``validate(params)`` runs every time a Params is built (config/flags.py): a bad
combination is one paragraph saying what is wrong and what to do, before
anything is loaded or started.
"""

from packaging.version import Version

from tf_cnn_benchmarks import test_hooks
from tf_cnn_benchmarks.config import tf_config
from tf_cnn_benchmarks.config import flag_specs
from tf_cnn_benchmarks.measure import versions
from tf_cnn_benchmarks.config.flag_specs import (FLAG_SPECS, REFUSED_SPECS,
                                          SERVER_PROTOCOLS)
from tf_cnn_benchmarks.config.usage_errors import UsageError
from tf_cnn_benchmarks.variable_update import all_reduce_spec
from tf_cnn_benchmarks.variable_update import modes
from tf_cnn_benchmarks.variable_update import sync_kind


def check_not_refused(spec, value):
  """UsageError with the reason when ``value`` is one the original accepted
  and this harness refuses (FlagSpec.refused_values)."""
  reason = spec.refused_values and dict(spec.refused_values).get(value)
  if reason:
    raise UsageError('--%s=%s is not implemented: %s.' % (spec.name, value,
                                                           reason))


def evaluates_during_training(p):
  """Does this run evaluate while it trains (any of its flags set)?"""
  return any(getattr(p, name) for name in EVAL_DURING_TRAINING_FLAGS)


def is_cluster_task(p):
  """Is this process a task of a cluster (vs. a single-process run)?

  Flags say so, or a TF_CONFIG environment variable naming a cluster.
  """
  return bool(p.job_name or p.cluster_spec or tf_config.read())


def validate(p):
  """Checks flag combinations that need no TensorFlow; raises UsageError."""
  for s in REFUSED_SPECS:
    if getattr(p, s.name) != s.default:
      raise UsageError(
          '--%s is a flag of the original tf_cnn_benchmarks that this '
          'harness does not implement (%s). Remove it from the command '
          'line.' % (s.name, s.refused))
  for s in FLAG_SPECS:
    check_not_refused(s, getattr(p, s.name))
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
  if p.input_only and (p.eval or p.forward_only):
    raise UsageError('--input_only measures the input pipeline alone; it '
                     'cannot be combined with --eval or --forward_only.')
  if p.input_only and p.data_dir is None:
    raise UsageError('--input_only measures a real input pipeline; give '
                     '--data_dir (synthetic data has no pipeline to '
                     'measure).')
  _validate_all_reduce_flags(p)
  _validate_gpu_flags(p)
  _validate_precision_flags(p)
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
  # Not a flag, but read with them: a bad value is refused before
  # TensorFlow loads, like a bad flag.
  test_hooks.check_slowdown()
  _validate_input_flags(p)
  _validate_evaluation_flags(p)
  _validate_mlperf_flags(p)
  _validate_freeze_flags(p)
  _validate_summary_flags(p)
  _validate_cluster_flags(p)
  _validate_engine(p)


# Optimizers the tf2 engine applies with the graph engine's own kernels
# (engine_tf2/optimizer.py).
TF2_OPTIMIZERS = ('sgd', 'momentum')


def _validate_engine(p):
  """--engine=tf2 runs what has a tf.distribute equivalent; anything else
  names the engine that runs it."""
  if p.engine != flag_specs.TF2_ENGINE:
    return
  graph_only = '--engine=graph runs it (the default)'
  for name, what in flag_specs.GRAPH_ENGINE_ONLY.items():
    if getattr(p, name) != flag_specs.SPECS_BY_NAME[name].default:
      raise UsageError(
          '--%s (%s) is not implemented by --engine=tf2; %s. Drop --%s, or '
          'drop --engine=tf2.' % (name, what, graph_only, name))
  if is_cluster_task(p):
    _validate_tf2_cluster(p, graph_only)
  elif p.num_gpus > 1 and p.variable_update != 'replicated':
    raise UsageError(
        '--engine=tf2 over %d devices runs --variable_update=replicated '
        '(MirroredStrategy: a copy per device, gradients all-reduced); '
        '--variable_update=%s over several devices has no tf.distribute '
        'equivalent here: %s. Pass --variable_update=replicated, or drop '
        '--engine=tf2.' % (p.num_gpus, p.variable_update, graph_only))
  if (p.num_gpus > 1 or is_cluster_task(p)) and (p.xla_compile or p.xla):
    raise UsageError(
        '--xla_compile with --engine=tf2 compiles the whole tf.function '
        'step, which runs on one device of a single process only (a '
        'MirroredStrategy step, or a cluster\'s, holds cross-replica calls '
        'XLA cannot compile); %s. Drop --xla_compile, or run one device '
        '(--num_gpus=1) in a single process.' % graph_only)
  if p.optimizer not in TF2_OPTIMIZERS:
    raise UsageError(
        '--optimizer=%s is not implemented by --engine=tf2 (it runs %s); '
        '%s. Pick one of those, or drop --engine=tf2.' % (
            p.optimizer, ' and '.join(TF2_OPTIMIZERS), graph_only))


# The oldest TensorFlow a tf2 cluster task runs on. Its start-up bound
# (cluster/task/tf2_runtime.py) configures the coordination service's
# registration as a barrier (cluster_register_with_barrier), a field 2.19
# added, in the proto module 2.19 moved under tensorflow/compiler/xla/tsl;
# without the barrier a worker returns from registering before its peers
# have, and an absent one goes unnamed. Checked here, before TensorFlow
# loads, so that every task (and the launcher, for all of them) stops
# with this reason rather than an ImportError that leaves no record.
TF2_CLUSTER_MIN_TF = '2.19'


def _validate_tf2_cluster(p, graph_only):
  """A tf2 cluster task: a mode with a tf.distribute multi-worker strategy
  (variable_update/modes.py), one replica per worker, on a TensorFlow that
  has what its runtime needs."""
  mode = modes.get(p.variable_update)
  if mode.tf2_cluster_strategy is None:
    raise UsageError(
        '--variable_update=%s has no tf.distribute equivalent, so --engine='
        'tf2 does not run it in a cluster; %s. In a cluster the tf2 engine '
        'runs %s. Pick one of those, or drop --engine=tf2.' % (
            p.variable_update, graph_only, '; '.join(
                '%s (%s)' % (m.name, m.tf2_cluster_strategy)
                for m in modes.MODES.values() if m.tf2_cluster_strategy)))
  if mode.tf2_cluster_strategy == modes.PARAMETER_SERVER and (
      sync_kind.of(p.cross_replica_sync, p.sync_updates) is
      sync_kind.SyncKind.MEAN):
    raise UsageError(
        '--engine=tf2 runs parameter_server as %s: its coordinator runs '
        'each step on some worker, which applies its own gradient to the ps '
        'variables; it waits for a round of one step per worker with '
        '--sync_updates=barrier (the original tool\'s synchronous ps '
        'semantics), and not at all with --cross_replica_sync=False. True '
        'synchronous SGD (--sync_updates=mean, the default: the mean of '
        'every worker\'s gradient applied once) has no tf.distribute '
        'equivalent over ps tasks; %s. Pass --sync_updates=barrier or '
        '--cross_replica_sync=False, or drop --engine=tf2.' % (
            mode.tf2_cluster_strategy, graph_only))
  if p.num_gpus > 1:
    raise UsageError(
        '--engine=tf2 runs one replica per cluster worker: %s places a '
        'CPU worker\'s replica on its CPU:0 only (it has no virtual-device '
        'towers), so --num_gpus=%d would train one replica while the flag '
        'says %d; %s. Drop --num_gpus (start more workers instead), or '
        'drop --engine=tf2.' % (mode.tf2_cluster_strategy, p.num_gpus,
                                p.num_gpus, graph_only))
  installed = versions.tf_installed_version()
  # An unknown distribution (a build from source) is let through: nothing
  # to read its version from without loading it.
  if installed is not None and Version(installed) < Version(
      TF2_CLUSTER_MIN_TF):
    raise UsageError(
        '--engine=tf2 in a cluster needs TensorFlow >= %s (the '
        'MultiWorkerMirroredStrategy start-up bound is the coordination '
        'service\'s registration barrier, new in %s; the tf2 cluster '
        'runtime is tested from there on); this is TensorFlow %s. Install '
        'TensorFlow >= %s on every host, or drop --engine=tf2: --engine='
        'graph (the default) runs the cluster modes on every TensorFlow '
        'from 2.12.' % (
            TF2_CLUSTER_MIN_TF, TF2_CLUSTER_MIN_TF, installed,
            TF2_CLUSTER_MIN_TF))


# Flags that tune replicated mode's all-reduce (variable_update/all_reduce.py).
ALL_REDUCE_TUNING_FLAGS = ('agg_small_grads_max_bytes', 'gradient_repacking')


def _validate_all_reduce_flags(p):
  if p.all_reduce_spec:
    try:
      ranges = all_reduce_spec.parse(p.all_reduce_spec)
    except all_reduce_spec.SpecError as e:
      raise UsageError(str(e)) from None
    reason = all_reduce_spec.refusal(ranges, p.variable_update)
    if reason:
      raise UsageError('--all_reduce_spec=%s with --variable_update=%s is '
                       'not supported: %s.' % (
                           p.all_reduce_spec, p.variable_update, reason))
  if p.hierarchical_copy:
    _validate_hierarchical_copy(p)
  for name in ALL_REDUCE_TUNING_FLAGS:
    if getattr(p, name) and p.variable_update != 'replicated':
      raise UsageError('--%s tunes replicated mode\'s all-reduce; it does '
                       'nothing with --variable_update=%s.' % (
                           name, p.variable_update))
  if p.variable_consistency == 'relaxed' and p.variable_update not in (
      'replicated', 'distributed_replicated'):
    raise UsageError(
        '--variable_consistency=relaxed defers gradients by one step in '
        'replicated and distributed_replicated mode; --variable_update=%s '
        'has no such step.' % p.variable_update)


def _validate_gpu_flags(p):
  if p.per_gpu_thread_count and p.gpu_thread_mode == 'global':
    raise UsageError(
        '--per_gpu_thread_count=%d sizes the per-GPU thread pools of '
        '--gpu_thread_mode=gpu_private or gpu_shared; with '
        '--gpu_thread_mode=global the GPUs use TensorFlow\'s shared pool. '
        'Drop one of them.' % p.per_gpu_thread_count)
  try:
    all_reduce_spec.ring_order(p.gpu_indices, p.num_gpus)
  except all_reduce_spec.SpecError as e:
    raise UsageError(str(e)) from None


# The half-precision flags that mean something with --use_fp16 only.
FP16_FLAGS = ('fp16_dtype', 'fp16_loss_scale', 'fp16_enable_auto_loss_scale',
              'fp16_inc_loss_scale_every_n', 'fp16_vars')
# Where the original scaled the loss automatically: the modes whose
# gradients meet in one process before the update.
AUTO_LOSS_SCALE_MODES = ('parameter_server', 'replicated', 'independent')


def _validate_precision_flags(p):
  if not p.use_fp16:
    for name in FP16_FLAGS:
      if getattr(p, name) != flag_specs.SPECS_BY_NAME[name].default:
        raise UsageError(
            '--%s sets up half-precision compute, which this run does not '
            'use; add --use_fp16, or drop --%s.' % (name, name))
    return
  if p.fp16_loss_scale is not None and p.fp16_loss_scale <= 0:
    raise UsageError(
        '--fp16_loss_scale=%g: the loss is multiplied by the scale and the '
        'gradients divided by it, so it must be > 0 (1: no scaling).'
        % p.fp16_loss_scale)
  nccl = all_reduce_spec.uses_nccl(p.all_reduce_spec)
  if p.fp16_enable_auto_loss_scale:
    if nccl:
      raise UsageError(
          '--fp16_enable_auto_loss_scale with --all_reduce_spec=%s: the '
          'original refused automatic loss scaling with NCCL, and with no '
          'GPU here this harness cannot check NCCL\'s all-reduce inside the '
          'conditional update a skipped step needs. Give a fixed '
          '--fp16_loss_scale, or another --all_reduce_spec.'
          % p.all_reduce_spec)
    if p.variable_update not in AUTO_LOSS_SCALE_MODES or (
        is_cluster_task(p)):
      raise UsageError(
          '--fp16_enable_auto_loss_scale skips a step whose gradients are '
          'not finite, which needs every gradient of the step in one '
          'process before the update: it runs with --variable_update=%s in '
          'a single process (as in the original), not with %s. Give a '
          'fixed --fp16_loss_scale instead.' % (
              ', '.join(AUTO_LOSS_SCALE_MODES),
              '--variable_update=%s%s' % (
                  p.variable_update,
                  ' in a cluster' if is_cluster_task(p) else '')))
  if p.fp16_vars and nccl:
    raise UsageError(
        '--fp16_vars with --all_reduce_spec=%s: the original did not '
        'all-reduce half-precision variables\' gradients with NCCL. Drop '
        '--fp16_vars, or use another --all_reduce_spec.' % p.all_reduce_spec)
  if p.fp16_vars and p.gradient_repacking:
    raise UsageError(
        '--fp16_vars with --gradient_repacking: the original did not repack '
        'half-precision gradients. Drop one of them.')


def _validate_hierarchical_copy(p):
  why = None
  if p.variable_update != 'replicated':
    why = ('it is an all-reduce of --variable_update=replicated; %s '
           'combines its gradients its own way' % p.variable_update)
  elif p.all_reduce_spec:
    why = ('--all_reduce_spec=%s chooses the all-reduce too (the original '
           'silently preferred the spec); give one of them'
           % p.all_reduce_spec)
  elif p.num_gpus < 2 or p.num_gpus % 2:
    why = ('it splits the towers into two halves of the same size, so it '
           'needs an even --num_gpus > 1 (the original\'s left an odd '
           'count\'s last tower out of the sum)')
  elif p.network_topology == 'gcp_v100' and p.num_gpus != 8:
    why = ('--network_topology=gcp_v100 names main towers among 8 (the '
           'pairs 0-5 and 2-7 of its two NVLink cliques); use '
           '--network_topology=dgx1 for %d' % p.num_gpus)
  if why:
    raise UsageError('--hierarchical_copy with --num_gpus=%d: %s.' % (
        p.num_gpus, why))


# The original's --input_preprocessor names other than 'default', and why
# they are refused.
REFUSED_INPUT_PREPROCESSORS = {
    'official_models_imagenet':
        'it ran the preprocessing of tensorflow/models\' official ResNet '
        '(channel-mean subtraction instead of scaling to [-1, 1]), which '
        'this harness does not carry',
}


def _validate_input_flags(p):
  if not p.use_datasets:
    raise UsageError(
        '--use_datasets=False selected the original\'s RecordInput queue '
        'pipeline (TensorFlow 1 queue ops), which this harness does not '
        'implement; every input is read with tf.data. Drop the flag (or '
        'give --use_datasets).')
  if p.input_preprocessor != 'default':
    why = REFUSED_INPUT_PREPROCESSORS.get(
        p.input_preprocessor, 'it is not a preprocessor of the original '
        'for imagenet or cifar10')
    raise UsageError(
        '--input_preprocessor=%s is not implemented (%s); use '
        '--input_preprocessor=default.' % (p.input_preprocessor, why))


# Any of these makes a run evaluate while it trains (run/evaluation.py).
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
  if during and p.batch_group_size > 1:
    raise UsageError(
        '--%s evaluates after given steps, but --batch_group_size=%d runs '
        'steps in groups of one session.run each; drop one of them.' % (
            during[0], p.batch_group_size))
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


def _validate_mlperf_flags(p):
  """--ml_perf_compliance_logging logs an MLPerf resnet time-to-accuracy
  run (run/mlperf_log.py); anything else could not pass MLPerf's checker."""
  if p.ml_perf and (p.data_dir is None or p.data_name == 'cifar10'):
    raise UsageError(
        '--ml_perf changes how ImageNet records are preprocessed (crops '
        'ignore the bounding boxes, images are centred on the channel '
        'means), as the original\'s did; this run reads %s. Give --data_dir '
        'with ImageNet-format records, or drop --ml_perf.' % (
            'synthetic data' if p.data_dir is None else 'CIFAR-10'))
  if not p.ml_perf_compliance_logging:
    if p.ml_perf_log_file:
      raise UsageError('--ml_perf_log_file says where the MLPerf log goes; '
                       'add --ml_perf_compliance_logging, or drop it.')
    return
  try:
    import mlperf_logging.mllog  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    raise UsageError(
        '--ml_perf_compliance_logging writes its log with MLPerf\'s own '
        'library, which is not installed: pip install mlperf-logging (or '
        'pip install -e ".[mlperf]" in this checkout), or drop the flag.'
    ) from None
  if 'resnet' not in p.model:
    raise UsageError(
        '--ml_perf_compliance_logging logs MLPerf\'s image classification '
        'benchmark, which is a ResNet (resnet50_v1.5); --model=%s is not a '
        'ResNet. Pick one (e.g. --model=resnet50_v1.5, or resnet20 with '
        '--data_name=cifar10), or drop the flag.' % p.model)
  if p.eval or p.forward_only or p.input_only:
    raise UsageError('--ml_perf_compliance_logging logs a training run; it '
                     'cannot be combined with --eval, --forward_only or '
                     '--input_only.')
  if p.stop_at_top_1_accuracy is None:
    raise UsageError(
        '--ml_perf_compliance_logging logs a time-to-accuracy run: MLPerf '
        'trains to a target and its log ends with whether it was reached. '
        'Add --stop_at_top_1_accuracy=T and an evaluation schedule (e.g. '
        '--eval_during_training_every_n_epochs=1).')


def _validate_freeze_flags(p):
  """--freeze_when_forward_only: the original's conditions, as usage errors."""
  if not p.freeze_when_forward_only:
    return
  if not p.forward_only:
    raise UsageError(
        '--freeze_when_forward_only freezes the graph of a --forward_only '
        'run; add --forward_only, or drop it.')
  if p.train_dir:
    raise UsageError(
        '--freeze_when_forward_only turns the variables into constants, so '
        'there is nothing to restore from or save to --train_dir; drop one '
        'of them.')
  if is_cluster_task(p):
    raise UsageError(
        '--freeze_when_forward_only runs in a single process; drop it from '
        'cluster tasks.')


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


def _validate_sync_updates(p, mode):
  """--sync_updates=barrier only where workers apply through ps tasks and
  wait for each other: a synchronous cluster of a ps mode."""
  if p.sync_updates == 'mean':
    return
  where = None
  if not is_cluster_task(p):
    where = 'a single process, which has no workers to synchronise'
  elif not mode.has_ps_tasks:
    where = ('--variable_update=%s, which has no ps tasks to apply to'
             % p.variable_update)
  elif not p.cross_replica_sync:
    where = ('an asynchronous cluster (--cross_replica_sync=False), whose '
             'workers never wait for each other')
  if where:
    raise UsageError(
        '--sync_updates=%s chooses how a synchronous cluster of %s '
        'combines its workers\' gradients, but this run is %s. Drop the '
        'flag, or run a cluster of one of those modes with '
        '--cross_replica_sync=True.' % (
            p.sync_updates, ' or '.join(modes.names(has_ps_tasks=True)),
            where))


def _validate_cluster_flags(p):
  """Cluster checks that need no host list (cluster/roles.py checks those)."""
  mode = modes.get(p.variable_update)
  _validate_sync_updates(p, mode)
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
        'was given (--job_name/--cluster_spec/TF_CONFIG); in a cluster use '
        'one of %s.'
        % (p.variable_update, ', '.join(modes.names(runs_in_cluster=True))))
  if p.job_name and not (p.worker_hosts or p.cluster_spec or
                         tf_config.read()):
    raise UsageError('--job_name=%s needs --worker_hosts (and --ps_hosts '
                     'for ps modes), --cluster_spec or TF_CONFIG.'
                     % p.job_name)
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
