"""--benchmark_log_dir: the files the original's benchmark logger wrote.

The original handed this flag to the official models' BenchmarkFileLogger,
and dashboards were built on its two files, so they are written in its
format:

* ``benchmark_run.log``: one JSON object describing the run (model_name,
  dataset, test_id, run_date, tensorflow_version, TF_* environment
  variables, run_parameters as typed name/value entries, machine_config);
* ``metric.log``: one JSON object per line and metric: name, value (float),
  unit, global_step, timestamp, extras.

The metrics are the original's: current_examples_per_sec (and the training
accuracies) on each step row, average_examples_per_sec at the end, and
eval_* accuracies for each evaluation. The JSON run record (--result_dir)
stays the harness's primary output; these files only mirror it.
"""

import datetime
import json
import numbers
import os

import tensorflow as tf

from tf_cnn_benchmarks.measure import environment

RUN_LOG = 'benchmark_run.log'
METRIC_LOG = 'metric.log'
# The logger's timestamps: UTC with microseconds and a literal Z.
_TIME_FORMAT = '%Y-%m-%dT%H:%M:%S.%fZ'


def _now():
  return datetime.datetime.now(datetime.timezone.utc).strftime(_TIME_FORMAT)


def _typed_parameter(name, value):
  """A run parameter as the logger typed it (bool before int: a bool is an
  int in Python; bools were written as strings)."""
  if isinstance(value, bool):
    return {'name': name, 'bool_value': str(value)}
  if isinstance(value, int):
    return {'name': name, 'long_value': value}
  if isinstance(value, float):
    return {'name': name, 'float_value': value}
  if isinstance(value, str):
    return {'name': name, 'string_value': value}
  return {'name': name, 'string_value': str(value)}


def _machine_config():
  config = {'cpu_info': {'num_cores': os.cpu_count(),
                         'cpu_info': environment.cpu_model()}}
  try:
    pages, page_size = os.sysconf('SC_PHYS_PAGES'), os.sysconf('SC_PAGE_SIZE')
    config['memory_total'] = pages * page_size
    config['memory_available'] = os.sysconf('SC_AVPHYS_PAGES') * page_size
  except (ValueError, OSError, AttributeError):
    pass  # not a POSIX system that says
  accelerator = environment.accelerator()
  if accelerator:
    config['gpu_info'] = {'model': accelerator}
  return config


def run_parameters(rc, session_config):
  """The parameters the original logged for a run."""
  p = rc.params
  return {
      'model': rc.model.name,
      'dataset': rc.data_name,
      'mode': rc.mode.value,
      'single_sess': False,
      'devices': str(rc.tower_devices),
      'batch_size': rc.global_batch_size,
      'batch_size_per_device': rc.batch_size_per_device,
      'num_batches': rc.num_batches,
      'num_epochs': rc.num_batches * rc.global_batch_size / float(
          rc.examples_per_epoch),
      'data_format': rc.data_format,
      'rewrite_config': p.rewriter_config,
      'optimizer': p.optimizer,
      'session_config': str(session_config),
  }


class FileLogger:
  """Writes benchmark_run.log and appends to metric.log in ``log_dir``."""

  def __init__(self, log_dir):
    self.log_dir = log_dir
    os.makedirs(log_dir, exist_ok=True)

  def log_run_info(self, model_name, dataset_name, run_params, test_id=None):
    info = {
        'model_name': model_name,
        'dataset': {'name': dataset_name},
        'machine_config': _machine_config(),
        'test_id': test_id,
        'run_date': _now(),
        'tensorflow_version': {'version': tf.version.VERSION,
                               'git_hash': tf.version.GIT_VERSION},
        'tensorflow_environment_variables': [
            {'name': k, 'value': v} for k, v in sorted(os.environ.items())
            if k.startswith('TF_')],
        'run_parameters': [_typed_parameter(k, v)
                           for k, v in sorted(run_params.items())],
    }
    # One run per folder, as the original: a new run replaces the file.
    with open(os.path.join(self.log_dir, RUN_LOG), 'w') as f:
      json.dump(info, f)
      f.write('\n')

  def log_metric(self, name, value, unit=None, global_step=None, extras=None):
    if not isinstance(value, numbers.Number):
      return  # the logger skipped what is not a number
    metric = {'name': name, 'value': float(value), 'unit': unit,
              'global_step': global_step, 'timestamp': _now(),
              'extras': [{'name': k, 'value': v}
                         for k, v in sorted((extras or {}).items())]}
    # Flushed per line: a dashboard may read it while the run goes on.
    with open(os.path.join(self.log_dir, METRIC_LOG), 'a') as f:
      f.write(json.dumps(metric) + '\n')

  def log_step_row(self, step, images_per_sec, accuracy=None):
    self.log_metric('current_examples_per_sec', images_per_sec,
                    global_step=step)
    if accuracy is not None:
      self.log_metric('top_1_accuracy', accuracy[0], global_step=step)
      self.log_metric('top_5_accuracy', accuracy[1], global_step=step)

  def log_evaluation(self, evaluation, images_per_sec=None):
    """An evaluation (evaluation.Evaluation.as_dict()) at its global step."""
    step = evaluation['global_step']
    self.log_metric('eval_top_1_accuracy', evaluation['top_1_accuracy'],
                    global_step=step)
    self.log_metric('eval_top_5_accuracy', evaluation['top_5_accuracy'],
                    global_step=step)
    if images_per_sec is not None:
      self.log_metric('eval_average_examples_per_sec', images_per_sec,
                      global_step=step)


def open_logger(log_dir, params, rc, session_config):
  """The run's logger in ``log_dir``, its run info written."""
  logger = FileLogger(log_dir)
  logger.log_run_info(rc.model.name, rc.data_name,
                      run_parameters(rc, session_config),
                      test_id=params.benchmark_test_id)
  return logger
