"""The machine-readable record of a run (schema: results/SCHEMA.md).

Written once per run, atomically: a reader (or a crash) never sees half a
file.
"""

import dataclasses
import datetime
import os

from results import record_io
from results.record_io import CURRENT_SCHEMA_VERSION
from results.record_io import write_record_atomically
from tf_cnn_benchmarks import test_hooks
from tf_cnn_benchmarks.config import gpu_settings
from tf_cnn_benchmarks.process import malloc_tuning
from tf_cnn_benchmarks.measure import environment


def _jsonable(value):
  if isinstance(value, (str, int, float, bool)) or value is None:
    return value
  if isinstance(value, (list, tuple)):
    return [_jsonable(v) for v in value]
  return str(value)


def _utilisation_summary(u):
  """Model FLOP utilisation fields (null when not known)."""
  if u is None:
    return {'gflops_per_image': None, 'model_gflops_per_sec': None,
            'peak_gflops_per_sec': None, 'mfu': None}
  return {'gflops_per_image': u.gflops_per_image,
          'model_gflops_per_sec': u.model_gflops_per_sec,
          'peak_gflops_per_sec': u.peak_gflops_per_sec, 'mfu': u.mfu}


def _rate(value, measured):
  """A throughput for the record: None unless measured and positive."""
  return value if measured and value is not None and value > 0 else None


def _time_to_target(p, result):
  """The time-to-accuracy fields (run/evaluation.py); null without
  --stop_at_top_1_accuracy or when the target was not reached."""
  target = result.target
  return {
      'target_top_1_accuracy': p.stop_at_top_1_accuracy,
      'time_to_target_sec': target.time_sec if target else None,
      'training_time_to_target_sec': (target.training_time_sec if target
                                      else None),
      'steps_to_target': target.steps if target else None,
      'epochs_to_target': target.epochs if target else None,
  }


def utc_now():
  """A record's time stamp (started_at, finished_at)."""
  return datetime.datetime.now(datetime.timezone.utc).isoformat()


def build_record(run_id, started_at, finished_at, params, rc, result,
                 data_description=None, cluster_run_id=None):
  p = params
  return _record(run_id, started_at, finished_at, p, result,
                 _config(p, rc, data_description), cluster_run_id,
                 _environment())


def build_unstarted_record(run_id, started_at, finished_at, params, role,
                           result):
  """The record of a run stopped before it started (while TensorFlow was
  loading: liveness/early_signals.py), built without TensorFlow: what
  only a resolved run knows is null, the rest is as the flags give it.
  ``role``: the cluster task's roles.ClusterRole, or None."""
  p = params
  config = {
      'model': p.model, 'data_name': p.data_name,
      'synthetic': p.data_dir is None, 'data_dir': p.data_dir,
      'data_description': None, 'mode': None,
      'batch_size_per_device': p.batch_size or None,
      'global_batch_size': None, 'num_devices': None, 'device': p.device,
      'data_format': p.data_format, 'variable_update': p.variable_update,
      'optimizer': p.optimizer, 'num_batches': p.num_batches,
      'num_warmup_batches': p.num_warmup_batches, 'use_fp16': p.use_fp16,
      'compute_dtype': None, 'xla_compile': bool(p.xla_compile or p.xla),
      'num_workers': role.num_workers if role is not None else 1,
      'cross_replica_sync': p.cross_replica_sync,
      'sync_updates': p.sync_updates, 'engine': p.engine}
  config.update(_role_config(role))
  return _record(run_id, started_at, finished_at, p, result, config,
                 p.cluster_run_id or None,
                 _environment(with_tensorflow=False))


def _environment(with_tensorflow=True):
  """Where the run was measured, and what --tune_malloc set in this
  process: that is the core's doing (process/malloc_tuning.py), so it joins
  here, not in measure/environment.py, which knows only the machine."""
  described = environment.describe(with_tensorflow=with_tensorflow)
  described['malloc'] = malloc_tuning.describe()
  return described


def _role_config(role):
  return {
      'num_ps': role.num_ps if role is not None else 0,
      'job_name': role.job_name if role is not None else None,
      'task_index': role.task_index if role is not None else None,
      # Every task's address by job, however the cluster was given (host
      # flags or a --cluster_spec file).
      'cluster': role.tf_cluster_def() if role is not None else None,
      # Where this task's server listened, as the kernel had it: TensorFlow
      # binds every interface whatever the spec says (cluster/server.py).
      'server_listens_on': list(role.listens_on) if role is not None
                           else None,
  }


def _config(p, rc, data_description):
  role = rc.cluster
  num_workers, towers_per_worker = rc.num_workers, rc.num_towers
  if role is not None and role.in_graph:
    # A controller's one graph has a tower on every device of every worker
    # and run_config times it as a single worker; describe the real cluster.
    num_workers = role.num_workers
    towers_per_worker = rc.num_towers // num_workers
  config = {
      'model': rc.model.name,
      'data_name': rc.data_name,
      'synthetic': p.data_dir is None,
      'data_dir': p.data_dir,
      'data_description': data_description,
      'mode': rc.mode.value,
      'batch_size_per_device': rc.batch_size_per_device,
      'global_batch_size': rc.global_batch_size,
      'num_devices': towers_per_worker,
      'device': rc.device_type,
      'data_format': rc.data_format,
      'variable_update': p.variable_update,
      'optimizer': p.optimizer,
      'num_batches': rc.num_batches,
      'num_warmup_batches': rc.num_warmup_batches,
      'use_fp16': p.use_fp16,
      'compute_dtype': rc.compute_dtype.name,
      'variable_dtype': rc.variable_dtype.name,
      'loss_scale': (dataclasses.asdict(rc.loss_scaling)
                     if rc.loss_scaling else None),
      'xla_compile': bool(p.xla_compile or p.xla),
      'num_workers': num_workers,
      'cross_replica_sync': p.cross_replica_sync,
      'sync_updates': p.sync_updates,
      'engine': p.engine,
      # The GPU runtime's settings as this process passed them
      # (config/gpu_settings.py).
      'gpu_settings': gpu_settings.describe(p, rc.gpus_visible, os.environ),
  }
  config.update(_role_config(role))
  return config


def _record(run_id, started_at, finished_at, p, result, config,
            cluster_run_id, environment_description):
  times = result.times
  # A run that did not finish well measured no throughput: its rates are
  # missing (null), never 0.0, so no mean or median that includes it is
  # dragged down; the samples it took stay in `timing`.
  # A run short of its --stop_at_top_1_accuracy target trained and timed
  # its steps like any other: its throughput stands.
  measured = (result.status in ('ok', 'target_not_reached') and bool(times)
              and times.num_steps > 0)
  summary = {
      'images_per_sec': _rate(result.images_per_sec, measured),
      'worker_images_per_sec': _rate(
          times.total_images_per_sec(1) if times else None, measured),
      'images_per_sec_mean_of_steps': _rate(
          times.mean_speed() if times else None, measured),
      'images_per_sec_stddev_err': (times.speed_uncertainty()
                                    if measured else None),
      'jitter': times.jitter() if measured else None,
      'median_step_time_sec': times.median_step_time() if times else None,
      'num_steps': times.num_steps if times else 0,
      'final_loss': times.losses[-1] if times and times.losses else None,
      'top_1_accuracy': result.top_1_accuracy,
      'top_5_accuracy': result.top_5_accuracy,
      'num_eval_examples': result.num_eval_examples,
      'input_only_images_per_sec': result.input_images_per_sec,
      'input_bound': result.input_bound,
      'diverged_at_step': result.diverged_at_step,
      'evaluations': list(result.evaluations),
      'stopped_at_step': result.stopped_at_step,
      'other_cpu_share': result.other_cpu_share if measured else None,
      'cpu_seconds_per_image': (result.cpu_seconds_per_image if measured
                                else None),
  }
  summary.update(_time_to_target(p, result))
  summary.update(_utilisation_summary(result.utilisation))
  summary.update(result.memory.record_fields() if result.memory else
                 {'peak_rss_mb': None, 'peak_device_memory_mb': None})
  timing = {
      'step_times_sec': list(times.timed) if times else [],
      'warmup_step_times_sec': list(times.warmup) if times else [],
      'timed_wall_time_sec': times.timed_wall_time if times else None,
      'step_losses': list(times.losses) if times else [],
  }
  return {
      'schema_version': CURRENT_SCHEMA_VERSION,
      'run_id': run_id,
      'cluster_run_id': cluster_run_id,
      'started_at': started_at,
      'finished_at': finished_at,
      'status': result.status,
      'failure': result.failure,
      'peer_failures': list(result.peer_failures),
      # Steps run again after a refused copy: [{step, refused}]
      # (cluster/task/step_repeats.py).
      'repeated_steps': list(result.repeated_steps),
      'phases': dict(result.phases),
      # Workers the chief found slower than the others: [{task, slowdown,
      # steps: [first, last]}] (cluster/watch/stragglers.py).
      'stragglers': list(result.stragglers),
      # --ml_perf_compliance_logging's log file (run/mlperf_log.py), else
      # null.
      'mlperf_log': result.mlperf_log_path,
      'label': p.label,
      'benchmark_test_id': p.benchmark_test_id,
      # Test-only: the fraction of each step's time idled after it, so a
      # deliberately slowed run never passes for a real one (null: real).
      'injected_slowdown': test_hooks.recorded_slowdown(),
      'config': config,
      'flags': {k: _jsonable(v) for k, v in sorted(p.as_dict().items())},
      'environment': environment_description,
      'timing': timing,
      'summary': summary,
  }


def write(result_dir, rec):
  path = os.path.join(result_dir, record_io.record_file_name(rec))
  write_record_atomically(path, rec)
  return path


# The start of write_or_say's line, for whoever looks for it in a log.
NOT_WRITTEN = 'Could not write the run record to '


def write_or_say(result_dir, rec, say):
  """``write``, or one line saying why the record could not be written
  (a full or read-only --result_dir); returns the path or None.

  Never raises OSError: a run that cannot keep its record still ends
  with its own status and exit code, and a watchdog ending a stuck run
  from its thread must reach os._exit (a raise there would leave the
  run hung for ever, deaf to further signals).
  """
  try:
    return write(result_dir, rec)
  except OSError as e:
    say(NOT_WRITTEN + '%s: %s; the run ends with its own status and exit '
        'code regardless (free space there or pass another --result_dir).'
        % (result_dir, e.strerror or e))
    return None
