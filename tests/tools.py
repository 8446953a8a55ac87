"""What a test needs from the machine, checked in one place.

A test whose tool is missing (Chromium, `ip` and network namespaces,
OpenSSH, FUSE, root, the original tool's checkout, a git checkout) calls
``unavailable(what, install)``: it skips on a developer's machine, but
under CI=true it fails, saying what to install. A CI run that lacks a tool
would otherwise pass with the guarantee that test checks unchecked.
`.ci/run` installs every tool on a fresh machine.

Skips that no installation can lift stay plain skips, each with its
reason: a TensorFlow build without NCHW convolutions on a CPU, TensorFlow
2.12 wheels on Python >= 3.12, a C library other than glibc, a platform
other than Linux; and the side-by-side with the original tool when no
checkout of it is configured (its source is on GitHub, which CI's network
does not reach). tests/test_claims.py lists them and keeps every other
skip routed through here.
"""

import os
import shutil

import pytest

CHROMIUM_INSTALL = 'apt-get install -y chromium (Debian/Ubuntu)'
IP_INSTALL = 'apt-get install -y iproute2'
SSH_INSTALL = 'apt-get install -y openssh-server openssh-client'
FUSE_INSTALL = ('apt-get install -y fuse libfuse2 and pip install fusepy '
                '(setup.cfg\'s test extra), with /dev/fuse in the machine or '
                'container')
IPTABLES_INSTALL = 'apt-get install -y iptables'
ROOT_INSTALL = ('run the tests as root (network namespaces, tmpfs and FUSE '
                'mounts need CAP_SYS_ADMIN); .ci/run says so')


def in_ci():
  """Is this a CI run (CI=true, as GitHub Actions and most CIs set it)?"""
  return os.environ.get('CI', '').strip().lower() not in ('', '0', 'false',
                                                          'no')


def unavailable(what, install):
  """Skips the test (fails it under CI=true): ``what`` is missing here;
  ``install``: what makes it available."""
  message = '%s; to run this test: %s' % (what, install)
  if in_ci():
    pytest.fail('CI=true, but ' + message + ' (.ci/run installs it)',
                pytrace=False)
  pytest.skip(message)


def require_command(name, install, *alternatives):
  """The path of command ``name`` (or of an alternative name), else
  unavailable."""
  for candidate in (name,) + alternatives:
    path = shutil.which(candidate)
    if path:
      return path
  unavailable('the `%s` command is not installed' % name, install)
  return None


def require_root(why):
  if os.geteuid() != 0:
    unavailable('%s need root (CAP_SYS_ADMIN)' % why, ROOT_INSTALL)


def chromium():
  """Headless Chromium's path (the dashboard tests render with it)."""
  return require_command('chromium', CHROMIUM_INSTALL, 'chromium-browser')
