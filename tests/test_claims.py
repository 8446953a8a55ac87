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
                        4: 'unreachable', 5: 'target_not_reached',
                        130: 'interrupted'}, documented
  assert (exit_codes.OK, exit_codes.RUN_FAILED, exit_codes.USAGE,
          exit_codes.STALLED, exit_codes.UNREACHABLE,
          exit_codes.TARGET_NOT_REACHED,
          exit_codes.INTERRUPTED) == (0, 1, 2, 3, 4, 5, 130)
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


def _flat(name):
  """A document's text with its line breaks and runs of spaces as one."""
  return re.sub(r'\s+', ' ', _read(name))


def test_constants_the_documents_quote_are_the_codes():
  """Bounds and thresholds the documents state in numbers, against the
  constants the code runs with: a change of either side without the other
  turns this red (the behaviour behind each is tested elsewhere)."""
  from results import detection_power  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster import deadlines  # pylint: disable=g-import-not-at-top,unused-import
  from tf_cnn_benchmarks.cluster.task import step_repeats  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster.task import tf2_runtime  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster.watch import reachability  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster.watch import root_cause  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.cluster.watch import stragglers  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.config import flag_specs  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.liveness import phases  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.liveness import stop_request  # pylint: disable=g-import-not-at-top
  readme, reliability, cluster = (_flat('README.md'), _flat('RELIABILITY.md'),
                                  _flat('docs/cluster.md'))
  default = lambda name: flag_specs.SPECS_BY_NAME[name].default  # pylint: disable=unnecessary-lambda-assignment
  quoted = [
      # (document text, the number it states, the code's value)
      (readme, r'A phase that takes longer than (\d+) s',
       phases.ANNOUNCE_AFTER_SECONDS),
      (readme, r'run ends within ~(\d+) s, record written',
       stop_request.SIGNAL_GRACE_SECONDS),
      (reliability, r'SIGINT/SIGTERM/SIGHUP \(.*?\) ends within (\d+) s',
       stop_request.SIGNAL_GRACE_SECONDS),
      (cluster, r'its watchdog does the same after (\d+) s',
       stop_request.SIGNAL_GRACE_SECONDS),
      (readme, r'after `--stall_timeout` \((\d+) s\)', default('stall_timeout')),
      (cluster, r'retrying until `--startup_timeout` \(default (\d+) s\)',
       default('startup_timeout')),
      (cluster, r'`--stall_shutdown_timeout` seconds later \(default (\d+);',
       default('stall_shutdown_timeout')),
      (reliability, r'`root_cause.PEER_FAILURE_WAIT_SECONDS` \((\d+) s\)',
       root_cause.PEER_FAILURE_WAIT_SECONDS),
      (cluster, r'for up to (\d+) s \(`root_cause.PEER_FAILURE_WAIT_SECONDS`',
       root_cause.PEER_FAILURE_WAIT_SECONDS),
      (reliability, r'`tf2_runtime.HEARTBEAT_TIMEOUT_SECONDS`, (\d+) s',
       tf2_runtime.HEARTBEAT_TIMEOUT_SECONDS),
      (cluster, r'heartbeats after (\d+) s \(`HEARTBEAT_TIMEOUT_SECONDS`\)',
       tf2_runtime.HEARTBEAT_TIMEOUT_SECONDS),
      (cluster, r'\(`GetStatus`, (\d+) s deadline',
       reachability.frozen_peers.__defaults__[0]),
      (reliability, r'run again by an asynchronous worker, at most (\d+) '
       r'times', step_repeats.MAX_REPEATS),
      (cluster, r'runs that step again \(at most (\d+) times\)',
       step_repeats.MAX_REPEATS),
      (cluster, r'A worker at (\d+)x or more the median', stragglers.THRESHOLD),
      (cluster, r'again if it gets ([\d.]+)x worse', stragglers.WORSE_FACTOR),
      (cluster, r'over (\d+) readings \(about', stragglers.WINDOW),
      (readme, r'a goal shown only on at least (\d+) trials \(`MIN_TRIALS`',
       detection_power.MIN_TRIALS),
  ]
  wrong = []
  for text, pattern, value in quoted:
    found = re.search(pattern, text)
    assert found, pattern
    if float(found.group(1)) != float(value):
      wrong.append((pattern, found.group(1), value))
  assert wrong == [], wrong


def test_the_ledger_and_the_mutation_list_agree():
  """docs/claims.md names a breakage for each behavioural claim it can:
  every id it names is in the mutation list, every breakage in the list is
  named there, and every test it cites exists (file, and function)."""
  from tests.mutations import breakages  # pylint: disable=g-import-not-at-top
  ids = {b.id for b in breakages.BREAKAGES}
  named, cited = set(), set()
  for line in _read('docs/claims.md').splitlines():
    cells = [c.strip() for c in line.split('|')[1:-1]]
    if len(cells) != 4 or not re.match(r'^[RLPCA]\d+$', cells[0]):
      continue
    named |= set(re.findall(r'`([a-z0-9_]+)`', cells[3]))
    cited |= set(re.findall(r'`([\w/]+\.py(?:::\w+)?)', cells[2]))
  assert named - ids == set(), 'not in the mutation list: %s' % (named - ids)
  assert ids - named == set(), 'not in docs/claims.md: %s' % (ids - named)
  missing = []
  for citation in cited:
    path, _, function = citation.partition('::')
    full = os.path.join(REPO, 'tests', path)
    if not os.path.isfile(full):
      full = os.path.join(REPO, path)
    if not os.path.isfile(full):
      missing.append(citation)
    elif function and 'def %s(' % function not in _read(full):
      missing.append(citation)
  assert missing == [], missing


def test_every_image_the_documents_show_exists():
  """A screenshot a document shows is a file of the repository."""
  missing = []
  for name in ('README.md', 'RELIABILITY.md', 'PERFORMANCE.md',
               'results/README.md', 'docs/cluster.md'):
    folder = os.path.dirname(os.path.join(REPO, name))
    for target in re.findall(r'!\[[^\]]*\]\(([^)]+)\)', _read(name)):
      if not os.path.isfile(os.path.join(folder, target)):
        missing.append('%s: %s' % (name, target))
  assert missing == [], missing
