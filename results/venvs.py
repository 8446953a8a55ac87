"""One cached virtual environment per TensorFlow version, for `matrix`.

A venv lives in VENV_ROOT/tf-<version> (default ~/.cache/tf_cnn_benchmarks/
venvs). It holds TensorFlow at that version plus this repository's runtime
requirements from setup.cfg (not the repository itself: the benchmark runs
from the checkout with the venv's python). A venv is reused when its ready
marker (written only after pip succeeded) names the current requirements; one
built for other requirements gets them installed first; a half-built one is
rebuilt.
A file lock stops two matrix commands from building the same venv at once.

The version `current`, or the version installed in this interpreter, needs no
venv: the running interpreter is used.

Test-only: the environment variable TEST_ENV_VAR gives the runs of chosen
versions extra environment variables, as if that version's venv set them
(tests/results/test_bisect_real.py slows one version on purpose with the
injected slowdown to give `bisect` a known answer). Only variables named
TF_CNN_BENCHMARKS_TEST_* may be set this way, so it can change nothing but
test switches, and those are recorded in the run record (`injected_slowdown`).
It never touches a cached venv: a later real run in the same venv is not
slowed.
"""

import configparser
import contextlib
import fcntl
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from results.errors import UsageError

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_VENV_ROOT = os.path.join(os.path.expanduser('~'), '.cache',
                                 'tf_cnn_benchmarks', 'venvs')
READY_MARKER = '.tf_cnn_benchmarks_ready'
CURRENT = 'current'
# Test-only: '{"2.20.0": {"TF_CNN_BENCHMARKS_TEST_SLOWDOWN": "0.5"}}' (JSON)
# gives every run under TensorFlow 2.20.0 that variable.
TEST_ENV_VAR = 'TF_CNN_BENCHMARKS_TEST_VERSION_ENV'
TEST_VARIABLE_PREFIX = 'TF_CNN_BENCHMARKS_TEST_'
# Distributions that provide the `tensorflow` module.
TENSORFLOW_DISTRIBUTIONS = ('tensorflow', 'tensorflow-cpu', 'tensorflow-intel',
                            'tensorflow-macos', 'tf-nightly', 'tf-nightly-cpu')


class VenvError(RuntimeError):
  """A venv could not be built; the message says why and where the log is."""


def installed_tf_version():
  """TensorFlow version installed for this interpreter, or None."""
  for name in TENSORFLOW_DISTRIBUTIONS:
    try:
      return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      continue
  return None


def _is_version(text):
  try:
    Version(text)
  except InvalidVersion:
    return False
  return True


def parse_versions(text):
  """'2.19.1, 2.20.0,current' -> ['2.19.1', '2.20.0', 'current']."""
  versions = [v.strip() for v in (text or '').split(',') if v.strip()]
  if not versions:
    raise UsageError('--tf_versions is empty: give a comma-separated list '
                     'like 2.19.1,2.20.0,current (current = this Python).')
  bad = [v for v in versions if v != CURRENT and not _is_version(v)]
  if bad:
    raise UsageError(
        '%s in --tf_versions is not a TensorFlow version. Use released '
        'version numbers like 2.20.0, or `current` for the TensorFlow of this '
        'Python.' % ', '.join(repr(v) for v in bad))
  return list(dict.fromkeys(versions))   # drop repeats, keep order


def uses_current_interpreter(version):
  if version == CURRENT:
    return True
  installed = installed_tf_version()
  # As versions, so 2.21.0-rc1 (TF's spelling) is the installed 2.21.0rc1.
  return installed is not None and Version(version) == Version(installed)


def resolved_version(version):
  """`current` -> the installed version number (for labels)."""
  if version == CURRENT:
    return installed_tf_version() or CURRENT
  return version


def venv_python(venv_dir):
  return os.path.join(venv_dir, 'bin', 'python')


def venv_path(venv_root, version):
  return os.path.join(venv_root, 'tf-%s' % version)


def _name(requirement):
  return canonicalize_name(Requirement(requirement).name)


def runtime_requirements(setup_cfg=None):
  """install_requires of setup.cfg, minus TensorFlow (pinned separately)."""
  parser = configparser.ConfigParser()
  parser.read(setup_cfg or os.path.join(REPO_ROOT, 'setup.cfg'))
  lines = parser.get('options', 'install_requires', fallback='').splitlines()
  requirements = [line.strip() for line in lines if line.strip()]
  requirements = [line for line in requirements
                  if not _name(line).startswith(('tensorflow', 'tf-'))]
  named = {_name(line) for line in requirements}
  # What the benchmark cannot run without.
  return requirements + [needed for needed in ('absl-py', 'numpy')
                         if needed not in named]


def tensorflow_distribution():
  """The distribution the venvs install TensorFlow from (and whose releases
  `bisect` lists): tensorflow-cpu wheels exist for x86-64 only; elsewhere
  the full package."""
  machine = platform.machine().lower()
  return 'tensorflow-cpu' if machine in ('x86_64', 'amd64') else 'tensorflow'


def tensorflow_requirement(version):
  return '%s==%s' % (tensorflow_distribution(), version)


def _test_env_error(text, why):
  return UsageError(
      'the test-only environment variable %s=%r %s. It maps TensorFlow '
      'versions to variables their runs get, as JSON: \'{"2.20.0": '
      '{"%sSLOWDOWN": "0.5"}}\'. Unset it for real measurements.'
      % (TEST_ENV_VAR, text, why, TEST_VARIABLE_PREFIX))


def test_environment(version, environ=None):
  """The extra variables the runs of `version` get (test-only; see the
  module docstring), {} normally. Raises UsageError for a malformed value."""
  environ = os.environ if environ is None else environ
  text = environ.get(TEST_ENV_VAR, '').strip()
  if not text:
    return {}
  try:
    by_version = json.loads(text)
  except ValueError:
    raise _test_env_error(text, 'is not JSON') from None
  if not isinstance(by_version, dict) or not all(
      isinstance(v, dict) for v in by_version.values()):
    raise _test_env_error(text, 'is not an object of objects')
  for variables in by_version.values():
    for name, value in variables.items():
      if not name.startswith(TEST_VARIABLE_PREFIX) or not isinstance(
          value, str):
        raise _test_env_error(
            text, 'sets %r; only %s* variables, with string values, may be '
            'set' % (name, TEST_VARIABLE_PREFIX))
  wanted = resolved_version(version)
  for key, variables in by_version.items():
    if key == wanted or (_is_version(key) and _is_version(wanted)
                         and Version(key) == Version(wanted)):
      return dict(variables)
  return {}


# The pip every venv installs with: pinned, so a new pip release cannot
# change how (or what) a version's venv is built between two runs of a
# matrix or a bisect. The TensorFlow it installs is named in each run's
# record by the hash of its files (environment.tf_files_sha256).
PIP_REQUIREMENT = 'pip==24.3.1'


def install_commands(version, venv_dir, base_python=None):
  """The commands that build the venv, in order."""
  python = venv_python(venv_dir)
  return [
      [base_python or sys.executable, '-m', 'venv', venv_dir],
      [python, '-m', 'pip', 'install', '--disable-pip-version-check',
       PIP_REQUIREMENT],
      [python, '-m', 'pip', 'install', '--disable-pip-version-check',
       tensorflow_requirement(version)] + runtime_requirements(),
  ]


@contextlib.contextmanager
def _locked(lock_path):
  with open(lock_path, 'w') as lock_file:
    fcntl.flock(lock_file, fcntl.LOCK_EX)
    try:
      yield
    finally:
      fcntl.flock(lock_file, fcntl.LOCK_UN)


def _run_logged(command, log_path):
  with open(log_path, 'a', encoding='utf-8') as log_file:
    log_file.write('$ %s\n' % ' '.join(command))
    log_file.flush()
    return subprocess.run(command, stdout=log_file, stderr=subprocess.STDOUT,
                          check=False).returncode


def ready_marker_text(version):
  return '\n'.join([version] + runtime_requirements()) + '\n'


def _read_text(path):
  try:
    with open(path, 'r', encoding='utf-8') as text_file:
      return text_file.read()
  except OSError:
    return None


def _tail(path, count=5):
  try:
    with open(path, 'r', encoding='utf-8', errors='replace') as log_file:
      return ' | '.join(line.strip() for line in log_file.readlines()[-count:])
  except OSError:
    return ''


def ensure_venv(version, venv_root=None, stream=None, run_command=None):
  """Returns the python of the venv for version, building it if needed.

  run_command(command, log_path) -> exit code runs each install step (tests
  inject a fake). Raises VenvError when a step fails.
  """
  venv_root = venv_root or DEFAULT_VENV_ROOT
  stream = stream or sys.stdout
  run_command = run_command or _run_logged
  os.makedirs(venv_root, exist_ok=True)
  venv_dir = venv_path(venv_root, version)
  marker = os.path.join(venv_dir, READY_MARKER)
  wanted = ready_marker_text(version)
  with _locked(venv_dir + '.lock'):
    built_for = _read_text(marker)
    if built_for == wanted:
      print('tf %s: reusing venv %s' % (version, venv_dir), file=stream,
            flush=True)
      return venv_python(venv_dir)
    log_path = venv_dir + '.install.log'
    if os.path.exists(log_path):
      os.remove(log_path)
    commands = install_commands(version, venv_dir)
    if built_for is not None:
      # setup.cfg gained requirements since the build (the benchmark would
      # fail importing them); pip adds them without rebuilding TensorFlow.
      commands = commands[-1:]
      print('tf %s: installing new requirements into venv %s (log %s)'
            % (version, venv_dir, log_path), file=stream, flush=True)
    else:
      if os.path.exists(venv_dir):
        # No marker: an earlier build stopped half-way; start clean.
        shutil.rmtree(venv_dir)
      print('tf %s: building venv %s (log %s)' % (version, venv_dir, log_path),
            file=stream, flush=True)
    for command in commands:
      if run_command(command, log_path) != 0:
        raise VenvError(
            'building the venv for TensorFlow %s failed at `%s`: %s (full log: '
            '%s). Check the version exists for this Python (%s) and platform.'
            % (version, ' '.join(command[:6]), _tail(log_path), log_path,
               platform.python_version()))
    with open(marker, 'w', encoding='utf-8') as marker_file:
      marker_file.write(wanted)
  return venv_python(venv_dir)


def python_for(version, venv_root=None, stream=None, run_command=None):
  """The interpreter that runs the benchmark with TensorFlow `version`."""
  if uses_current_interpreter(version):
    return sys.executable
  return ensure_venv(version, venv_root, stream, run_command)
