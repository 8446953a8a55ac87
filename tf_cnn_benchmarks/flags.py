"""The command line: absl flags, parsing, validation and the Params object.

Every flag is a row of flag_specs.py; that table is the single source: it
defines the absl flags for the command line *and* the defaults of
``make_params`` for code and tests that call a run directly.

This module must not import TensorFlow: flags are parsed (and logging is
configured from --verbosity) before TensorFlow is loaded.
"""

import difflib
import re
import sys
import types

from absl import flags as absl_flags

from tf_cnn_benchmarks import exit_codes
# FLAG_SPECS, SPECS_BY_NAME and VARIABLE_UPDATES are also read through this
# module by its callers (the launcher, tests).
from tf_cnn_benchmarks.flag_specs import (FLAG_SPECS, REFUSED, REFUSED_SPECS,
                                          SERVER_PROTOCOLS, SPECS_BY_NAME,
                                          THEMES, VARIABLE_UPDATES)
from tf_cnn_benchmarks.variable_update import all_reduce_spec
from tf_cnn_benchmarks.variable_update import modes


class UsageError(ValueError):
  """A bad flag value or combination; the message is shown to the user."""


def report_usage_error(message):
  """Prints a UsageError's paragraph; returns the usage exit code."""
  sys.stderr.write('Error: %s\n' % message)
  return exit_codes.USAGE


def define_flags(flag_values=absl_flags.FLAGS):
  """Registers every flag with absl, each under its theme for --help."""
  for s in FLAG_SPECS:
    kw = dict(flag_values=flag_values, module_name=s.theme)
    if s.kind == 'string':
      absl_flags.DEFINE_string(s.name, s.default, s.help, **kw)
    elif s.kind == 'boolean':
      absl_flags.DEFINE_boolean(s.name, s.default, s.help, **kw)
    elif s.kind == 'enum':
      # Refused values parse too, so validate() can say why.
      absl_flags.DEFINE_enum(
          s.name, s.default,
          list(s.enum_values) + [v for v, _ in s.refused_values], s.help,
          **kw)
    elif s.kind == 'integer':
      absl_flags.DEFINE_integer(s.name, s.default, s.help,
                                lower_bound=s.lower_bound,
                                upper_bound=s.upper_bound, **kw)
    elif s.kind == 'float':
      absl_flags.DEFINE_float(s.name, s.default, s.help,
                              lower_bound=s.lower_bound,
                              upper_bound=s.upper_bound, **kw)
    elif s.kind == 'list':
      absl_flags.DEFINE_list(s.name, s.default, s.help, **kw)
    else:
      raise ValueError('unknown flag kind %r' % s.kind)


def help_text(flag_values):
  """--help: every flag, grouped by theme in a fixed order."""
  lines = ['Usage: tf_cnn_benchmarks [--flag=value ...]',
           '       tf_cnn_benchmarks {build-dataset|compare|dashboard|suite|'
           'matrix|launch} --help', '']
  by_module = flag_values.flags_by_module_dict()
  for theme in THEMES + (REFUSED,):
    lines.append('%s:' % theme)
    for flag in sorted(by_module.get(theme, []), key=lambda f: f.name):
      default = 'none' if flag.default is None else flag.default_as_str
      lines.append('  --%s  (default: %s)' % (flag.name, default))
      spec = SPECS_BY_NAME[flag.name]
      if spec.kind == 'enum':
        # Only the values that run are offered (absl would list all).
        lines.append('      <%s>: %s' % ('|'.join(
            v or "''" for v in spec.enum_values), spec.help))
      else:
        lines.append('      %s' % flag.help)
    lines.append('')
  return '\n'.join(lines)


class Params(types.SimpleNamespace):
  """All settings of one run, read-only; modules read this, not flag globals.

  Attribute names are the flag names. ``replace(**changes)`` returns a
  modified copy (after validation).
  """

  def __setattr__(self, name, value):
    raise AttributeError('Params are read-only; use replace()')

  def replace(self, **changes):
    values = dict(vars(self))
    values.update(changes)
    return _build_params(values)

  def as_dict(self):
    return dict(vars(self))


def _build_params(values):
  params = Params.__new__(Params)
  params.__dict__.update(values)
  validate(params)
  return params


def default_values():
  return {s.name: s.default for s in FLAG_SPECS}


def make_params(**overrides):
  """Params with defaults for everything not given (for code and tests)."""
  values = default_values()
  unknown = sorted(set(overrides) - set(values))
  if unknown:
    raise UsageError('Unknown parameter(s): %s.' % ', '.join(unknown))
  for name, value in overrides.items():
    _check_value(SPECS_BY_NAME[name], value)
  values.update(overrides)
  return _build_params(values)


def params_from_flags(flag_values):
  values = default_values()
  for name in values:
    values[name] = flag_values[name].value
  return _build_params(values)


def _check_value(spec, value):
  """The same per-value checks absl applies, for make_params callers."""
  if value is None:
    return
  if spec.kind == 'enum' and value not in spec.enum_values:
    raise UsageError('--%s=%r is not valid; allowed values: %s.' % (
        spec.name, value, ', '.join(v or "''" for v in spec.enum_values)))
  if spec.kind in ('integer', 'float'):
    if spec.lower_bound is not None and value < spec.lower_bound:
      raise UsageError('--%s=%r is too small; it must be >= %s.' % (
          spec.name, value, spec.lower_bound))
    if spec.upper_bound is not None and value > spec.upper_bound:
      raise UsageError('--%s=%r is too large; it must be <= %s.' % (
          spec.name, value, spec.upper_bound))


def is_cluster_task(p):
  """Is this process a task of a cluster (vs. a single-process run)?"""
  return bool(p.job_name or p.cluster_spec)


def validate(p):
  """Checks flag combinations that need no TensorFlow; raises UsageError."""
  for s in REFUSED_SPECS:
    if getattr(p, s.name) != s.default:
      raise UsageError(
          '--%s is a flag of the original tf_cnn_benchmarks that this '
          'harness does not implement (%s). Remove it from the command '
          'line.' % (s.name, s.refused))
  for s in FLAG_SPECS:
    reason = s.refused_values and dict(s.refused_values).get(
        getattr(p, s.name))
    if reason:
      raise UsageError('--%s=%s is not implemented: %s.' % (
          s.name, getattr(p, s.name), reason))
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
  if p.data_name and p.data_dir is None and p.data_name not in (
      'imagenet', 'cifar10'):
    raise UsageError('--data_name must be imagenet or cifar10.')
  if p.input_only and (p.eval or p.forward_only):
    raise UsageError('--input_only measures the input pipeline alone; it '
                     'cannot be combined with --eval or --forward_only.')
  if p.input_only and p.data_dir is None:
    raise UsageError('--input_only measures a real input pipeline; give '
                     '--data_dir (synthetic data has no pipeline to '
                     'measure).')
  _validate_all_reduce_flags(p)
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
  _validate_input_flags(p)
  _validate_evaluation_flags(p)
  _validate_freeze_flags(p)
  _validate_summary_flags(p)
  _validate_cluster_flags(p)


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


# Any of these makes a run evaluate while it trains (evaluation.py).
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


def _validate_cluster_flags(p):
  """Cluster checks that need no host list (cluster/roles.py checks those)."""
  mode = modes.get(p.variable_update)
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
        'was given (--job_name/--cluster_spec); in a cluster use one of %s.'
        % (p.variable_update, ', '.join(modes.names(runs_in_cluster=True))))
  if p.job_name and not (p.worker_hosts or p.cluster_spec):
    raise UsageError('--job_name=%s needs --worker_hosts (and --ps_hosts '
                     'for ps modes), or --cluster_spec.' % p.job_name)
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


def parse_command_line(argv, flag_values=None):
  """Parses argv into Params; raises UsageError with a readable message."""
  flag_values = parse_flag_values(argv, flag_values)
  return params_from_flags(flag_values), flag_values


def parse_flag_values(argv, flag_values=None):
  """Parses argv into absl flag values, each checked alone; UsageError if bad.

  Checks across flags are Params' (validate); they depend on the process's
  place in a cluster, which the launcher decides from these values.
  """
  if flag_values is None:
    flag_values = absl_flags.FlagValues()
    define_flags(flag_values)
  try:
    leftover = flag_values(argv)[1:]
  except absl_flags.UnrecognizedFlagError as e:
    raise UsageError('Unknown flag --%s.%s Run with --help for every flag, '
                     'grouped by theme.' % (e.flagname, did_you_mean(
                         e.flagname, SPECS_BY_NAME, '--'))) from None
  except absl_flags.Error as e:
    raise UsageError(_readable(str(e))) from None
  if leftover:
    raise UsageError(
        'Unexpected argument(s) %s: every setting is a --flag=value (e.g. '
        '--model=resnet50). Run with --help for the flags.' %
        ' '.join(leftover))
  return flag_values


def did_you_mean(name, known, prefix=''):
  """' Did you mean --model?' for a near miss of one of ``known``, else ''."""
  close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
  return ' Did you mean %s%s?' % (prefix, close[0]) if close else ''


# absl's words for a bad value: "flag --NAME=VALUE: DETAIL".
_ABSL_VALUE_ERROR = re.compile(r'^flag --(\w+)=(.*?): (.*)$', re.S)
_WHAT_A_KIND_TAKES = {'integer': 'a whole number', 'float': 'a number'}


def _readable(absl_message):
  """A bad value's error in words: which flag, what it takes, no Python."""
  match = _ABSL_VALUE_ERROR.match(absl_message.strip())
  if not match:
    return '%s. Run with --help for the allowed values.' % (
        absl_message.rstrip('.'))
  name, value, detail = match.groups()
  spec = SPECS_BY_NAME.get(name)
  if spec is not None and spec.kind in _WHAT_A_KIND_TAKES and (
      'invalid literal' in detail or 'could not convert' in detail):
    example = spec.default if spec.default is not None else (
        1 if spec.kind == 'integer' else 0.1)
    return '--%s=%s is not a number: --%s takes %s (e.g. --%s=%s).' % (
        name, value, name, _WHAT_A_KIND_TAKES[spec.kind], name, example)
  if spec is not None and spec.kind == 'enum':
    return '--%s=%s is not one of the allowed values: %s.' % (
        name, value, ', '.join(v or "''" for v in spec.enum_values))
  return '--%s=%s: %s. Run with --help for the allowed values.' % (
      name, value, detail.rstrip('.'))


def main_help_requested(argv):
  return any(a in ('--help', '-h', '--helpfull', '-help') for a in argv[1:])


def print_help(out=sys.stdout):
  fv = absl_flags.FlagValues()
  define_flags(fv)
  out.write(help_text(fv) + '\n')
