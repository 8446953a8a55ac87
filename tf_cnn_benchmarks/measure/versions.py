"""Which harness and which TensorFlow are installed, without loading
TensorFlow (the ssh launcher asks every host before it starts anything)."""

import functools
import os
import subprocess

import tf_cnn_benchmarks


def package_version():
  """The version setup.cfg gives the installed package ('unknown' if it is
  not installed)."""
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  try:
    return metadata.version('tf_cnn_benchmarks')
  except metadata.PackageNotFoundError:
    return 'unknown'


def git_describe():
  """git describe of this checkout (None outside one, or without git)."""
  try:
    out = subprocess.run(
        ['git', 'describe', '--always', '--dirty', '--tags'],
        cwd=tf_cnn_benchmarks.REPO_ROOT, capture_output=True, text=True,
        timeout=5)
  except (OSError, subprocess.SubprocessError):
    return None
  return out.stdout.strip() if out.returncode == 0 else None


def git_commit():
  """(full sha, committer date as ISO-8601 UTC) of this checkout's HEAD, or
  (None, None) outside one. The date is what orders runs by commit
  (`tf_cnn_benchmarks history --order commit`) without the repository at
  hand; git describe's abbreviated sha alone has no order."""
  try:
    out = subprocess.run(
        ['git', 'log', '-1', '--format=%H %cd', '--date=iso-strict-local'],
        cwd=tf_cnn_benchmarks.REPO_ROOT, capture_output=True, text=True,
        timeout=5, env=dict(os.environ, TZ='UTC'))
  except (OSError, subprocess.SubprocessError):
    return None, None
  parts = out.stdout.split()
  if out.returncode != 0 or len(parts) != 2:
    return None, None
  return parts[0], parts[1]


def harness_version():
  """git describe of this checkout, else the installed package version."""
  return git_describe() or package_version()


# Once a process: the installation does not change under a running process,
# and the answer reads every installed distribution's file list (~0.3 s
# here), which a run asked three times (header, record, digest).
@functools.lru_cache(maxsize=None)
def tf_distribution():
  """The pip distribution that installed the ``tensorflow`` package
  (tensorflow, tensorflow-cpu, intel-tensorflow, ...), or None."""
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  names = metadata.packages_distributions().get('tensorflow') or []
  return names[0].replace('_', '-') if names else None


def tf_installed_version():
  """The installed TensorFlow's version as pip knows it (None if absent)."""
  name = tf_distribution()
  return installed_version(name) if name else None


def tf_files_sha256():
  """sha256 of the installed TensorFlow's RECORD, the list pip wrote of
  every file it installed with each file's own hash: one digest that
  names the installation byte for byte (None if absent). Two runs with
  the same digest ran the same TensorFlow files, whatever index they came
  from."""
  import hashlib  # pylint: disable=g-import-not-at-top
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  name = tf_distribution()
  try:
    text = metadata.distribution(name).read_text('RECORD') if name else None
  except metadata.PackageNotFoundError:
    text = None
  return hashlib.sha256(text.encode()).hexdigest() if text else None


def installed_version(distribution):
  """``distribution``'s version as pip knows it (None if absent)."""
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  try:
    return metadata.version(distribution)
  except metadata.PackageNotFoundError:
    return None
