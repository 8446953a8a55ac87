"""What the commands that start a whole cluster share.

`tf_cnn_benchmarks launch` (launcher.py) and `tf_cnn_benchmarks k8s`
(k8s_manifests.py) take the same cluster size and the same benchmark flags
after `--`, which every task will read. The size options, the split at
`--`, the flags each command sets for every task itself, and the choice of
a mode that runs as a cluster are decided here, once.
"""

from tf_cnn_benchmarks.config import flag_checks
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.variable_update import modes

# Every task's place in the cluster and the run id are set by the command
# (flags or TF_CONFIG); the user must not give them.
SET_FOR_EVERY_TASK = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts',
                      'controller_host', 'cluster_spec', 'cluster_run_id')


def add_size_arguments(parser):
  parser.add_argument('--ps', type=int, default=None,
                      help='ps tasks (default: 1 for parameter_server and '
                           'distributed_replicated, 0 for the all-reduce '
                           'modes)')
  parser.add_argument('--workers', type=int, default=2, help='workers')


def split_at_dashes(argv):
  """(the command's own arguments, the benchmark flags after `--`)."""
  own = list(argv[1:])
  if '--' not in own:
    return own, []
  cut = own.index('--')
  return own[:cut], own[cut + 1:]


def read_benchmark_flags(command, benchmark_flags, who_sets_them):
  """The flags after `--`, parsed as every task will parse them.

  UsageError for a flag the command sets itself (``who_sets_them`` says
  how, for the message) or a flag that is bad on its own. Checks across
  flags that depend on a task's place in the cluster come later.
  """
  given = {a.split('=', 1)[0].lstrip('-') for a in benchmark_flags
           if a.startswith('-')}
  clash = sorted(given & set(SET_FOR_EVERY_TASK))
  if clash:
    raise flags.UsageError(
        '%s; remove %s from the benchmark flags.' % (
            who_sets_them, ', '.join('--' + f for f in clash)))
  return flags.parse_flag_values([command] + list(benchmark_flags))


def cluster_mode(command, chosen):
  """The --variable_update mode of a cluster run (UsageError otherwise)."""
  flag_checks.check_not_refused(flags.SPECS_BY_NAME['variable_update'],
                                chosen.variable_update)
  mode = modes.get(chosen.variable_update)
  if not mode.runs_in_cluster:
    raise flags.UsageError(
        '%s runs a cluster: give --variable_update=one of %s (it was %s).'
        % (command, ', '.join(modes.names(runs_in_cluster=True)),
           chosen.variable_update))
  return mode


def num_ps_tasks(args, mode):
  """--ps, or the mode's default; UsageError for an impossible size."""
  num_ps = args.ps if args.ps is not None else int(mode.has_ps_tasks)
  if args.workers < 1 or num_ps < 0:
    raise flags.UsageError('--workers must be >= 1 and --ps >= 0.')
  return num_ps
