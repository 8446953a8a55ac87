"""The TensorFlow releases between two versions, from the package index.

pip itself asks the index (`pip index versions --json DIST`, run by the
interpreter that builds the venvs), so the list honours pip's configuration
(index URL, extra indexes, certificates: pip.conf and PIP_* variables) and
holds only releases with a wheel for this Python and platform, the ones a
venv can be built for. The distribution is the one the venvs install
(results/venvs.py: tensorflow-cpu on x86-64). Pre- and development
releases are left out (pip leaves them out unless asked); post-releases
(2.15.0.post1) are releases and stay. Order is PEP 440's
(packaging.version), so 2.9.0 comes before 2.10.0.
"""

import json
import subprocess
import sys

from packaging.version import InvalidVersion, Version

from results import venvs
from results.errors import UsageError

# Seconds pip may take to answer (a slow index, a cold cache).
INDEX_TIMEOUT = 180


class IndexUnavailable(RuntimeError):
  """The index could not be asked; the message says why."""


def index_command(distribution, python=None):
  return [python or sys.executable, '-m', 'pip', 'index', 'versions',
          '--json', '--disable-pip-version-check', distribution]


def parse_index_answer(text):
  """pip's JSON answer -> the final releases, oldest first."""
  try:
    answer = json.loads(text)
    listed = answer['versions']
  except (ValueError, KeyError, TypeError):
    raise IndexUnavailable('pip printed no version list: %r' % text[:200]) from None
  releases = []
  for text_version in listed:
    try:
      version = Version(text_version)
    except InvalidVersion:
      continue
    if not (version.is_prerelease or version.is_devrelease):
      releases.append(text_version)
  return sorted(set(releases), key=Version)


def list_releases(distribution=None, python=None, run=subprocess.run):
  """Every release of the TensorFlow distribution the index offers for
  this Python, oldest first. Raises IndexUnavailable when pip cannot say."""
  command = index_command(distribution or venvs.tensorflow_distribution(),
                          python)
  try:
    done = run(command, capture_output=True, text=True, timeout=INDEX_TIMEOUT,
               check=False)
  except (OSError, subprocess.SubprocessError) as error:
    raise IndexUnavailable('`%s` did not run: %s' % (' '.join(command), error))
  if done.returncode != 0:
    last = [line for line in done.stderr.splitlines() if line.strip()]
    raise IndexUnavailable('`%s` failed: %s' % (
        ' '.join(command), last[-1] if last else 'exit %d' % done.returncode))
  return parse_index_answer(done.stdout)


def _as_version(text, option):
  try:
    return Version(text)
  except InvalidVersion:
    raise UsageError('%s %r is not a version number; give a released '
                     'TensorFlow version such as 2.16.1.' % (option, text)) \
        from None


def between(releases, good, bad, distribution=None):
  """The releases from good to bad, both included, oldest first.

  Raises UsageError when either end is not a release in the list or good
  is not older than bad.
  """
  good_version = _as_version(good, '--good')
  bad_version = _as_version(bad, '--bad')
  if good_version >= bad_version:
    raise UsageError(
        '--good %s is not older than --bad %s. Bisecting looks for the first '
        'release that got slower, so --good names the older, fast release '
        'and --bad the newer, slow one.' % (good, bad))
  by_version = {Version(r): r for r in releases}
  for option, text, version in (('--good', good, good_version),
                                ('--bad', bad, bad_version)):
    if version not in by_version:
      raise UsageError(
          '%s %s is not a release of %s that the package index offers for '
          'Python %d.%d. Releases there: %s. Pick one of these.' % (
              option, text, distribution or venvs.tensorflow_distribution(),
              sys.version_info[0], sys.version_info[1],
              ', '.join(releases) or 'none'))
  return [by_version[v] for v in sorted(by_version)
          if good_version <= v <= bad_version]
