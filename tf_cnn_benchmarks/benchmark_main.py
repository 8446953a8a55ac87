"""The benchmark command: parse flags, configure logging, run, exit code."""

import uuid

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flag_checks
from tf_cnn_benchmarks.config import flag_specs
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.process import gpu_env
from tf_cnn_benchmarks.process import logs
from tf_cnn_benchmarks.process import malloc_tuning
from tf_cnn_benchmarks.process import openmp_env
from tf_cnn_benchmarks.run import record
from tf_cnn_benchmarks.run import run_result
from tf_cnn_benchmarks.liveness import early_signals


def main(argv):
  started = record.utc_now()
  early_signals.doing('reading the command line')
  if flags.main_help_requested(argv):
    flags.print_help()
    return exit_codes.OK
  if '--version' in argv[1:]:
    return _print_version()
  try:
    params, _ = flags.parse_command_line(argv)
  except flags.UsageError as e:
    return flags.report_usage_error(str(e))
  role = None
  if flag_checks.is_cluster_task(params):
    from tf_cnn_benchmarks.cluster import roles  # pylint: disable=g-import-not-at-top
    try:
      # A bad host list or task index is reported before TensorFlow loads.
      role = roles.resolve_role(params)
    except flags.UsageError as e:
      return flags.report_usage_error(str(e))
  if role is None or role.trains:  # a serving task (ps) writes no record
    early_signals.record_early_stop(
        _early_stop_recorder(params, role, started))
  early_signals.doing('loading TensorFlow')
  # OpenMP reads KMP_* when TensorFlow's library loads: set them first.
  openmp_env.apply(params)
  # The GPU runtime's TF_* variables, read as its devices and kernels start.
  gpu_env.apply(params)
  # Before TensorFlow allocates: see process/malloc_tuning.py.
  malloc_tuning.apply(params.tune_malloc)
  if not logs.load_tensorflow(params.verbosity):
    return exit_codes.RUN_FAILED
  early_signals.doing('preparing the run')
  # TensorFlow is imported only now, after its log level is set.
  from tf_cnn_benchmarks.run import driver  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.config import run_config  # pylint: disable=g-import-not-at-top
  logs.configure_after_tensorflow(params.verbosity)
  if params.list_models:
    from tf_cnn_benchmarks.config import model_listing  # pylint: disable=g-import-not-at-top
    model_listing.print_models()
    return exit_codes.OK
  if role is not None:
    from tf_cnn_benchmarks.cluster.task import run_task  # pylint: disable=g-import-not-at-top
    return run_task.main(params, role)  # ends the process itself
  try:
    rc = run_config.resolve(params)
  except flags.UsageError as e:
    return flags.report_usage_error(str(e))
  # The engine --engine names, each imported only by the runs that use it.
  if params.engine == flag_specs.TF2_ENGINE:
    from tf_cnn_benchmarks.engine_tf2 import engine  # pylint: disable=g-import-not-at-top
    chosen = engine.Tf2Engine()
  else:
    from tf_cnn_benchmarks.engine_graph import engine  # pylint: disable=g-import-not-at-top
    chosen = engine.GraphEngine()
  return driver.run(params, chosen, rc=rc).exit_code


def _early_stop_recorder(params, role, started):
  """How liveness/early_signals.py records this run if it is stopped before
  it starts (TensorFlow may be half-imported: not used here)."""
  def write(failure, phases, say):
    result = run_result.RunResult(
        status='interrupted', exit_code=exit_codes.INTERRUPTED,
        failure=failure, phases=phases)
    rec = record.build_unstarted_record(
        uuid.uuid4().hex, started, record.utc_now(), params, role, result)
    return (record.write_or_say(params.result_dir, rec, say)
            if params.result_dir else None)
  return write


def _print_version():
  """--version: this harness (and its commit), and the TensorFlow it runs."""
  if not logs.load_tensorflow(0):
    return exit_codes.RUN_FAILED
  from tf_cnn_benchmarks.measure import environment  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.measure import versions  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  commit = versions.git_describe()
  print('tf_cnn_benchmarks %s%s' % (versions.package_version(),
                                    ' (commit %s)' % commit if commit else ''))
  print('TensorFlow %s (%s)' % (tf.__version__, environment.tf_build_line()))
  return exit_codes.OK
