"""Builds valid schema-version-1 run records for tests (see results/SCHEMA.md)."""

import os
import uuid

import numpy as np

from results.record_io import write_record_atomically

_DEFAULT_CONFIG = {
    'model': 'trivial', 'data_name': 'imagenet', 'synthetic': True,
    'data_dir': None, 'mode': 'training', 'batch_size_per_device': 32,
    'global_batch_size': 32, 'num_devices': 1, 'device': 'cpu',
    'data_format': 'NHWC', 'variable_update': 'parameter_server',
    'optimizer': 'sgd', 'num_batches': 10, 'num_warmup_batches': 2,
    'use_fp16': False, 'compute_dtype': 'float32', 'xla_compile': False,
    'num_workers': 1, 'num_ps': 0, 'job_name': '', 'task_index': 0,
    'cross_replica_sync': True,
}


def make_record(model='trivial', label='', tf_version='2.21.0',
                step_times=None, status='ok', started_at=None, **config):
  """A valid record; images/sec follows from the step times and batch size."""
  step_times = [0.1] * 10 if step_times is None else [float(t) for t in step_times]
  record_config = dict(_DEFAULT_CONFIG, model=model, **config)
  record_config['global_batch_size'] = (
      record_config['batch_size_per_device'] * record_config['num_devices'])
  images_per_step = record_config['global_batch_size'] * record_config['num_workers']
  mean_step = float(np.mean(step_times))
  images_per_sec = images_per_step / mean_step
  step_rates = images_per_step / np.asarray(step_times)
  run_id = uuid.uuid4().hex
  return {
      'schema_version': 1,
      'run_id': run_id,
      'cluster_run_id': None,
      'started_at': started_at or '2025-01-01T00:00:00Z',
      'finished_at': started_at or '2025-01-01T00:00:10Z',
      'status': status,
      'failure': None if status == 'ok' else {
          'type': 'Error', 'message': 'it broke', 'task': None, 'hint': None},
      'label': label,
      'config': record_config,
      'flags': {'model': model, 'batch_size': record_config['batch_size_per_device'],
                'label': label},
      'environment': {
          'tf_version': tf_version, 'tf_git_version': 'v' + tf_version,
          'python_version': '3.11.7', 'numpy_version': '2.0.0',
          'harness_version': '0.1.0', 'cpu_model': 'test cpu', 'cpu_count': 2,
          'accelerator': None, 'hostname': 'testhost', 'platform': 'Linux'},
      'timing': {
          'step_times_sec': step_times, 'warmup_step_times_sec': [0.5, 0.2],
          'timed_wall_time_sec': float(np.sum(step_times)),
          'step_losses': [7.0 - 0.1 * i for i in range(len(step_times))]},
      'summary': {
          'images_per_sec': images_per_sec if status == 'ok' else None,
          'worker_images_per_sec': images_per_sec if status == 'ok' else None,
          'images_per_sec_mean_of_steps': float(np.mean(step_rates)),
          'images_per_sec_stddev_err': float(np.std(step_rates)),
          'jitter': 0.0, 'median_step_time_sec': float(np.median(step_times)),
          'num_steps': len(step_times), 'final_loss': 6.1,
          'top_1_accuracy': None, 'top_5_accuracy': None,
          'num_eval_examples': None},
  }


def write_record(folder, record):
  """Writes record under folder with the schema's file name; returns the path."""
  name = '20250101T000000Z_%s_worker-%d_%s.json' % (
      record['config']['model'], record['config'].get('task_index') or 0,
      record['run_id'][:8])
  path = os.path.join(folder, name)
  write_record_atomically(path, record)
  return path


def write_runs(folder, throughputs, rng, steps=10, plan=None, **record_args):
  """One run per throughput (images/sec), with noisy steps around it.

  plan: the runner's plan id; run i then records that it ran in round i + 1
  of it (SCHEMA.md `sequence`), so two sides written with one plan pair up.
  """
  paths = []
  batch = record_args.get('batch_size_per_device', 32)
  for round_index, ips in enumerate(throughputs, 1):
    mean_step = batch / ips
    noise = rng.normal(1.0, 0.01, steps)
    step_times = mean_step * noise / noise.mean()
    record = make_record(step_times=step_times, **record_args)
    if plan is not None:
      record['sequence'] = {'plan': plan, 'round': round_index,
                            'position': round_index, 'config': 'c'}
    paths.append(write_record(folder, record))
  return paths


def compare_versions(folder, capsys, *extra):
  """`compare` of 2.21.0 against 2.20.0 in ``folder``: (exit code, output)."""
  from results import compare  # pylint: disable=g-import-not-at-top
  code = compare.main(['compare', '--result_dir', str(folder), '--baseline',
                       '2.20.0', '--candidate', '2.21.0'] + list(extra))
  return code, capsys.readouterr().out


def trivial_row(out):
  """The one table row of the trivial configuration."""
  (row,) = [l for l in out.splitlines() if l.startswith('| trivial')]
  return row
