"""The command line: absl flags, parsing and the Params object.

Every flag is a row of config/flag_specs.py; that table is the single source: it
defines the absl flags for the command line *and* the defaults of
``make_params`` for code and tests that call a run directly.

This module must not import TensorFlow: flags are parsed (and logging is
configured from --verbosity) before TensorFlow is loaded.
"""

import dataclasses
import re
import sys
from typing import List, Optional

from absl import flags as absl_flags

from tf_cnn_benchmarks.config import flag_checks
from tf_cnn_benchmarks.config.flag_checks import validate
# The table and the errors are also read through this module by its callers
# (flags.SPECS_BY_NAME, flags.UsageError, flags.report_usage_error).
from tf_cnn_benchmarks.config.flag_specs import (FLAG_SPECS, REFUSED,  # noqa: F401
                                          SPECS_BY_NAME, THEMES,
                                          VARIABLE_UPDATES)
from tf_cnn_benchmarks.config.usage_errors import UsageError
from tf_cnn_benchmarks.config.usage_errors import did_you_mean
from tf_cnn_benchmarks.config.usage_errors import report_usage_error  # noqa: F401


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


# The Python type of each kind of flag (config/flag_specs.py); a value may
# also be None where the flag's default is.
_KIND_TYPES = {'boolean': bool, 'integer': int, 'float': float,
               'string': str, 'enum': str, 'list': List[str]}


def _replace(self, **changes):
  """A copy with ``changes``, validated again."""
  values = self.as_dict()
  values.update(changes)
  return _build_params(values)


def _as_dict(self):
  return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


# All settings of one run, frozen; modules read this, not flag globals. A
# field per flag of the table, named as the flag, typed by its kind.
Params = dataclasses.make_dataclass(
    'Params',
    [(spec.name, Optional[_KIND_TYPES[spec.kind]]) for spec in FLAG_SPECS],
    frozen=True,
    namespace={'replace': _replace, 'as_dict': _as_dict,
               '__doc__': 'All settings of one run (frozen; replace() '
                          'returns a changed copy).'})
Params.__module__ = __name__  # pickled by name, like a class defined here


def _build_params(values):
  params = Params(**values)
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
  flag_checks.check_not_refused(spec, value)
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
