"""Parse a TOML suite file into the list of benchmark runs to make.

  # suite.toml
  repeat = 3                 # runs per configuration (default 1)
  label = "nightly"          # optional --label for every run
  [defaults]                 # flags given to every configuration
  num_batches = 20
  [[config]]                 # one table per configuration
  name = "trivial-32"        # optional; shown in progress lines
  model = "trivial"          # every other key is a benchmark flag
  batch_size = 32
  [[config]]
  model = "trivial"
  batch_size = 64
  repeat = 5                 # optional per-configuration repeat
  [[config]]
  name = "trivial-ps-cluster"
  model = "trivial"
  variable_update = "parameter_server"
  launch = {ps = 1, workers = 2}   # a local cluster: `tf_cnn_benchmarks
                                   # launch --ps=1 --workers=2 -- FLAGS`
                                   # (only ps, workers, ps_exit_grace
                                   # and timeout: no hosts, no ssh)

Flag values: strings, numbers, booleans (passed as true/false) or lists
(joined with commas). `result_dir` is set by the suite command, never here.
"""

import dataclasses
import os

try:
  import tomllib
except ImportError:   # Python < 3.11: the same parser, packaged as tomli
  import tomli as tomllib

from results.errors import UsageError

TOP_LEVEL_KEYS = {'repeat', 'label', 'defaults', 'config'}
# The `launch` options a suite file may set: the size and the bounds of a
# local cluster. A suite file is data that gets shared and checked in; the
# options that choose hosts and what ssh runs there (hosts, ssh_option's
# ProxyCommand, ssh_config, remote_python) are the user's to type.
LAUNCH_KEYS = ('ps', 'workers', 'ps_exit_grace', 'timeout')
CONFIG_META_KEYS = {'name', 'repeat', 'label', 'launch'}
RESERVED_FLAGS = {'result_dir'}


@dataclasses.dataclass
class SuiteConfig:
  """One configuration: its benchmark flags and how often to run it."""
  name: str
  flag_args: list        # ['--model=trivial', ...]
  repeat: int
  label: str = ''
  # `tf_cnn_benchmarks launch` arguments (['--ps=1', '--workers=2']) when
  # the configuration runs as a local cluster; empty for one process.
  launch_args: list = dataclasses.field(default_factory=list)


def format_flag(name, value):
  if isinstance(value, bool):
    text = 'true' if value else 'false'
  elif isinstance(value, list):
    text = ','.join(format_flag('x', item).split('=', 1)[1] for item in value)
  else:
    text = str(value)
  return '--%s=%s' % (name, text)


def _check_flag_value(source, where, name, value):
  scalar = (str, int, float, bool)
  if isinstance(value, scalar) or (isinstance(value, list) and all(
      isinstance(item, scalar) for item in value)):
    return
  raise UsageError(
      '%s: %s sets flag %r to %r, which is not a string, number, boolean or '
      'list of those. Write flags as name = value pairs.'
      % (source, where, name, value))


def _check_repeat(source, where, value):
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise UsageError('%s: %s has repeat = %r; it must be a whole number >= 1.'
                     % (source, where, value))
  return value


def _flags_of(source, where, table):
  flag_args = []
  for name, value in table.items():
    if name in RESERVED_FLAGS:
      raise UsageError(
          '%s: %s sets %r, which the suite command sets itself; pass '
          '--%s to the suite command instead.' % (source, where, name, name))
    _check_flag_value(source, where, name, value)
    flag_args.append(format_flag(name, value))
  return flag_args


def parse_suite(text, source='suite file'):
  """Returns the list of SuiteConfig that the TOML text declares."""
  try:
    document = tomllib.loads(text)
  except tomllib.TOMLDecodeError as error:
    raise UsageError('%s is not valid TOML (%s). See results/suite_file.py '
                     'for the format.' % (source, error)) from error
  unknown = sorted(set(document) - TOP_LEVEL_KEYS)
  if unknown:
    raise UsageError(
        '%s: unknown top-level key(s) %s. A suite has `repeat`, `label`, a '
        '[defaults] table of flags and [[config]] tables; put flags inside '
        'those tables.' % (source, ', '.join(unknown)))
  repeat = _check_repeat(source, 'the suite', document.get('repeat', 1))
  label = str(document.get('label', ''))
  defaults = document.get('defaults', {})
  if not isinstance(defaults, dict):
    raise UsageError('%s: `defaults` must be a table of flags ([defaults]).'
                     % source)
  default_args = _flags_of(source, '[defaults]', defaults)
  tables = document.get('config', [])
  if not isinstance(tables, list) or not tables or not all(
      isinstance(table, dict) for table in tables):
    raise UsageError('%s declares no configuration: add at least one '
                     '[[config]] table with the flags to run, e.g. model = '
                     '"trivial".' % source)
  configs = []
  for index, table in enumerate(tables, 1):
    where = '[[config]] number %d' % index
    flags = {k: v for k, v in table.items() if k not in CONFIG_META_KEYS}
    own_args = _flags_of(source, where, flags)
    launch_args = _launch_args_of(source, where, table.get('launch'))
    name = str(table.get('name') or ' '.join(
        arg[2:] for arg in launch_args + own_args) or 'config%d' % index)
    configs.append(SuiteConfig(
        name=name, flag_args=default_args + own_args,
        repeat=_check_repeat(source, where, table.get('repeat', repeat)),
        label=str(table.get('label', label)), launch_args=launch_args))
  return configs


def _launch_args_of(source, where, launch):
  """`launch = {ps = 1, workers = 2}` -> ['--ps=1', '--workers=2']."""
  if launch is None:
    return []
  if not isinstance(launch, dict) or not launch:
    raise UsageError(
        '%s: %s has launch = %r; it must be a table of `tf_cnn_benchmarks '
        'launch` options, e.g. launch = {ps = 1, workers = 2}.'
        % (source, where, launch))
  refused = [key for key in launch if key not in LAUNCH_KEYS]
  if refused:
    raise UsageError(
        '%s: %s\'s launch table sets %r, which a suite file may not: it may '
        'size a local cluster (%s), while the options that choose hosts or '
        'what ssh runs are given on the command line. Run such a cluster '
        'with `tf_cnn_benchmarks launch` yourself.'
        % (source, where, refused[0], ', '.join(LAUNCH_KEYS)))
  return _flags_of(source, where + "'s launch", launch)


def load_suite(path):
  if not os.path.isfile(path):
    raise UsageError('suite file %r does not exist. Pass the path of a TOML '
                     'suite (format in results/suite_file.py).' % path)
  with open(path, 'rb') as suite_file:
    raw = suite_file.read()
  try:
    text = raw.decode('utf-8')
  except UnicodeDecodeError as error:
    raise UsageError('suite file %r is not UTF-8 text.' % path) from error
  return parse_suite(text, source=path)


def adhoc_config(flag_args, repeat):
  """The single configuration given on the command line after `--`."""
  for arg in flag_args:
    if not arg.startswith('-'):
      raise UsageError(
          'after `--` only benchmark flags may follow (like --model=trivial); '
          'got %r.' % arg)
    if arg.lstrip('-').split('=', 1)[0] in RESERVED_FLAGS:
      raise UsageError('pass --result_dir before `--` (to the suite command), '
                       'not among the benchmark flags.')
  name = ' '.join(arg.lstrip('-') for arg in flag_args) or 'defaults'
  return SuiteConfig(name=name, flag_args=list(flag_args), repeat=repeat)
