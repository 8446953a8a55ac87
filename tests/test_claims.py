"""Claims the documents make that code alone can check: the tables they
print against the code's own values, and the claims ledger
(docs/claims.md) against the mutation list that proves its guards."""

import os
import re

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.liveness import endings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(name):
  with open(os.path.join(REPO, name)) as f:
    return f.read()


def test_exit_codes_are_the_documented_ones():
  """README's "Exit codes" table (RELIABILITY.md guarantee 3): each code,
  the record status it goes with, and the ending the watchdog gives each
  status."""
  readme = _read('README.md')
  table = readme[readme.index('## Exit codes'):]
  table = table[:table.index('\n\n', table.index('| code |'))]
  documented = {int(code): status for code, status in re.findall(
      r'^\| (\d+) \| (?:`(\w+)`|—)', table, re.M)}
  assert documented == {0: 'ok', 1: 'failed', 2: '', 3: 'stalled',
                        4: 'unreachable', 130: 'interrupted'}, documented
  assert (exit_codes.OK, exit_codes.RUN_FAILED, exit_codes.USAGE,
          exit_codes.STALLED, exit_codes.UNREACHABLE,
          exit_codes.INTERRUPTED) == (0, 1, 2, 3, 4, 130)
  for status in (endings.FAILED, endings.STALLED, endings.UNREACHABLE,
                 endings.INTERRUPTED):
    code = endings.Ending(status, {}).exit_code
    assert documented[code] == status, (status, code)


# Skips no installation can lift (tests/tools.py says why they stay skips):
# (file, the text of its skip's condition or reason).
_PLATFORM_SKIPS = {
    ('tests/models/test_resnet.py', 'no NCHW convolution on CPU'),
    ('tests/models/test_densenet.py', 'no NCHW convolution on CPU'),
    ('tests/results/test_matrix.py', 'sys.version_info >= (3, 12)'),
    ('tests/test_malloc_tuning.py', 'needs glibc'),  # (twice)
    ('tests/test_cpu_share.py', 'Linux only'),
    # The original's source is on GitHub, which CI's network does not reach.
    ('tests/test_vs_original.py', "'no checkout of the original tool"),
    # The mutation runner's own test: a skipping guard in its tiny tree.
    ('tests/mutations/test_check.py', "'no such tool here'"),
}


def test_every_skip_for_a_missing_tool_goes_through_tests_tools():
  """Under CI=true a missing tool fails its test (tests/tools.py), so CI
  cannot pass with a guarantee unchecked. A new skip must go through
  tools.unavailable, or be a platform skip listed here."""
  found = set()
  for folder, _, files in os.walk(os.path.join(REPO, 'tests')):
    for name in files:
      path = os.path.join(folder, name)
      relative = os.path.relpath(path, REPO)
      if not name.endswith('.py') or relative in ('tests/tools.py',
                                                  'tests/test_claims.py'):
        continue
      with open(path) as f:
        text = f.read()
      for match in re.finditer(r'pytest\.skip\(|skipif\(|importorskip\(',
                               text):
        found.add((relative, text[match.end():match.end() + 120]))
  unexplained = [(path, after) for path, after in found
                 if not any(path == p and reason in after
                            for p, reason in _PLATFORM_SKIPS)]
  assert unexplained == [], unexplained
