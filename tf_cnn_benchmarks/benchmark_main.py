"""The benchmark command: parse flags, configure logging, run, exit code."""

from tf_cnn_benchmarks import cluster
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import flags
from tf_cnn_benchmarks import logs


def main(argv):
  if flags.main_help_requested(argv):
    flags.print_help()
    return exit_codes.OK
  try:
    params, _ = flags.parse_command_line(argv)
  except flags.UsageError as e:
    return flags.report_usage_error(str(e))
  role = None
  if cluster.configured(params):
    try:
      # A bad host list or task index is reported before TensorFlow loads.
      role = cluster.resolve_role(params)
    except flags.UsageError as e:
      return flags.report_usage_error(str(e))
  logs.configure_before_tensorflow(params.verbosity)
  logs.import_tensorflow_quietly(params.verbosity)
  # TensorFlow is imported only now, after its log level is set.
  from tf_cnn_benchmarks import driver  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks import run_config  # pylint: disable=g-import-not-at-top
  logs.configure_after_tensorflow(params.verbosity)
  if params.list_models:
    from tf_cnn_benchmarks import model_listing  # pylint: disable=g-import-not-at-top
    model_listing.print_models()
    return exit_codes.OK
  if role is not None:
    from tf_cnn_benchmarks import cluster_task  # pylint: disable=g-import-not-at-top
    return cluster_task.main(params, role)  # ends the process itself
  try:
    rc = run_config.resolve(params)
  except flags.UsageError as e:
    return flags.report_usage_error(str(e))
  result = driver.run(params, rc=rc)
  if result.record_path:
    print('Run record: %s' % result.record_path)
  return result.exit_code
