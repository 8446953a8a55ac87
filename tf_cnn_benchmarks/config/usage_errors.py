"""Errors in what the user typed: one paragraph, exit code 2.

No TensorFlow and nothing of the harness beyond the exit codes, so every
layer (flags, the launcher, the run config) can raise and print them.
"""

import difflib
import sys

from tf_cnn_benchmarks import exit_codes


class UsageError(ValueError):
  """A bad flag value or combination; the message is shown to the user."""


def report_usage_error(message):
  """Prints a UsageError's paragraph; returns the usage exit code."""
  sys.stderr.write('Error: %s\n' % message)
  return exit_codes.USAGE


def did_you_mean(name, known, prefix=''):
  """' Did you mean --model?' for a near miss of one of ``known``, else ''."""
  close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
  return ' Did you mean %s%s?' % (prefix, close[0]) if close else ''
