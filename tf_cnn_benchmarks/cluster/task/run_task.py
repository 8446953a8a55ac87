"""What one task of a cluster does, by its role, and how its process ends.

  worker (between-graph modes), controller: build the graph, train, report
    (driver.run with the cluster's RunConfig); with --engine=tf2, the tf2
    engine under the strategy its runtime starts (tf2_runtime.py);
  ps, and the workers of distributed_all_reduce: serve until every client
    is done or gone (serving_task.py).

The process always ends with os._exit: after a peer has died,
Session.close() and interpreter shutdown can block for minutes inside
TensorFlow, and a task that is done must not linger.
"""

import os
import sys

from tf_cnn_benchmarks.run import driver
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flag_specs
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.config import run_config
from tf_cnn_benchmarks.cluster.task import runtime
from tf_cnn_benchmarks.cluster import server


def main(params, role):
  """Runs this task; never returns."""
  try:
    code = _run(params, role)
  except BaseException:  # pylint: disable=broad-except
    import traceback  # pylint: disable=g-import-not-at-top
    traceback.print_exc()
    code = exit_codes.RUN_FAILED
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(code)  # pylint: disable=protected-access


def _run(params, role):
  try:
    # Before anything else: a protocol this build lacks would otherwise
    # fail deep inside server start-up.
    server.check_protocol(role.protocol)
    rc = (run_config.resolve(params, cluster_role=role) if role.trains
          else None)
  except flags.UsageError as e:
    return flags.report_usage_error(str(e))
  if not role.trains:
    from tf_cnn_benchmarks.cluster.task import serving_task  # pylint: disable=g-import-not-at-top
    return serving_task.serve(params, role)
  return _train(params, role, rc)


def _train(params, role, rc):
  # The runtime starts the server inside the run, so that a signal while
  # it starts is handled like one in any later phase (liveness/).
  if params.engine == flag_specs.TF2_ENGINE:
    from tf_cnn_benchmarks.cluster.task import tf2_runtime  # pylint: disable=g-import-not-at-top
    from tf_cnn_benchmarks.engine_tf2 import engine  # pylint: disable=g-import-not-at-top
    task_runtime = tf2_runtime.Tf2ClusterRuntime(role, params)
    return driver.run(params, engine.Tf2Engine(task_runtime.strategy), rc=rc,
                      runtime=task_runtime).exit_code
  from tf_cnn_benchmarks.engine_graph import engine  # pylint: disable=g-import-not-at-top
  return driver.run(params, engine.GraphEngine(), rc=rc,
                    runtime=runtime.ClusterRuntime(role, params)).exit_code
