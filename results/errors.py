"""User-facing errors of the results commands.

A UsageError carries one paragraph saying what is wrong and what to do; the
commands print it and exit with USAGE_EXIT_CODE instead of a traceback.
"""

import sys
import textwrap

USAGE_EXIT_CODE = 2


class UsageError(Exception):
  """Bad input from the user (missing folder, no records, unknown group...)."""


def report_usage_error(error, stream=None):
  """Prints the error as one wrapped paragraph; returns the exit code 2."""
  stream = stream or sys.stderr
  text = textwrap.fill('error: %s' % error, width=100)
  print(text, file=stream)
  return USAGE_EXIT_CODE
