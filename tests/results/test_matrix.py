"""`tf_cnn_benchmarks matrix`: versions, cached venvs, labels."""

import io
import os
import re
import sys

import pandas as pd
import pytest

from results import matrix
from results import store
from results import venvs
from results.errors import UsageError
from tests.results.test_suite import FAKE_BENCHMARK

INSTALLED = venvs.installed_tf_version()


def _matrix(argv):
  out = io.StringIO()
  code = matrix.main(['matrix'] + [str(a) for a in argv], stream=out)
  return code, out.getvalue()


def test_current_version_runs_with_this_interpreter(tmp_path):
  code, out = _matrix(['--tf_versions', 'current', '--result_dir', tmp_path,
                       '--venv_dir', tmp_path / 'venvs', '--repeat', '2',
                       '--benchmark_script', FAKE_BENCHMARK, '--',
                       '--model=trivial'])
  assert code == 0, out
  assert '== TensorFlow %s: 2 run(s) with %s' % (INSTALLED, sys.executable) in out
  frame = store.load_runs([tmp_path])
  assert list(frame['label']) == ['tf-%s' % INSTALLED] * 2
  assert not os.path.exists(tmp_path / 'venvs' / ('tf-%s' % INSTALLED))


def _fake_venv(root, version):
  """A ready venv whose python is this interpreter behind a wrapper script."""
  venv_dir = venvs.venv_path(str(root), version)
  os.makedirs(os.path.join(venv_dir, 'bin'))
  python = venvs.venv_python(venv_dir)
  with open(python, 'w') as wrapper:
    wrapper.write('#!/bin/sh\nexec %s "$@"\n' % sys.executable)
  os.chmod(python, 0o755)
  with open(os.path.join(venv_dir, venvs.READY_MARKER), 'w') as marker:
    marker.write(venvs.ready_marker_text(version))
  return python


def test_cached_venv_is_reused_and_labels_follow_versions(tmp_path):
  fake_python = _fake_venv(tmp_path / 'venvs', '9.9.0')
  suite_path = tmp_path / 'suite.toml'
  suite_path.write_text('[[config]]\nmodel = "trivial"\n[[config]]\n'
                        'model = "lenet"\n')
  code, out = _matrix(['--tf_versions', 'current,9.9.0', '--suite', suite_path,
                       '--result_dir', tmp_path / 'runs', '--venv_dir',
                       tmp_path / 'venvs', '--benchmark_script',
                       FAKE_BENCHMARK])
  assert code == 0, out
  assert 'tf 9.9.0: reusing venv' in out
  frame = store.load_runs([tmp_path / 'runs'])
  assert sorted(frame['label']) == ['tf-%s' % INSTALLED] * 2 + ['tf-9.9.0'] * 2
  logs = [open(os.path.join(tmp_path / 'runs' / 'logs', name)).readline()
          for name in os.listdir(tmp_path / 'runs' / 'logs')]
  assert sum(line.startswith('$ %s ' % fake_python) for line in logs) == 2
  # The versions take turns, run by run, in a balanced order (A B, B A).
  progress = [line.split(': ')[0] for line in out.splitlines()
              if line.startswith('[')]
  current = 'tf-%s' % INSTALLED
  assert progress == [
      '[1/4] model=trivial (1/1) %s' % current,
      '[2/4] model=trivial (1/1) tf-9.9.0',
      '[3/4] model=lenet (1/1) tf-9.9.0',
      '[4/4] model=lenet (1/1) %s' % current]
  # Each record says where it ran (SCHEMA.md `sequence`): one plan, the
  # round, and its place in the plan, so compare pairs a round's versions.
  by_position = frame.sort_values('sequence.position')
  assert list(by_position['sequence.position']) == [1, 2, 3, 4]
  assert list(by_position['label']) == [current, 'tf-9.9.0', 'tf-9.9.0',
                                        current]
  assert list(by_position['sequence.config']) == [
      'model=trivial', 'model=trivial', 'model=lenet', 'model=lenet']
  assert set(frame['sequence.round']) == {1}
  assert frame['sequence.plan'].nunique() == 1


def test_user_label_wins(tmp_path):
  code, out = _matrix(['--tf_versions', 'current', '--result_dir', tmp_path,
                       '--label', 'mine', '--benchmark_script', FAKE_BENCHMARK,
                       '--', '--model=trivial'])
  assert code == 0, out
  assert list(store.load_runs([tmp_path])['label']) == ['mine']


def _recording_install(calls):
  """An ensure_venv run_command that records and makes only the venv's bin."""
  def install(command, log_path):
    calls.append(command)
    if command[1:3] == ['-m', 'venv']:
      os.makedirs(os.path.join(command[3], 'bin'))
    return 0
  return install


def test_venv_build_commands_and_failure(tmp_path):
  calls = []
  fake_install = _recording_install(calls)
  python = venvs.ensure_venv('2.20.0', str(tmp_path), io.StringIO(),
                             fake_install)
  assert python == str(tmp_path / 'tf-2.20.0' / 'bin' / 'python')
  assert calls[0][1:] == ['-m', 'venv', str(tmp_path / 'tf-2.20.0')]
  install = calls[-1]
  assert install[0] == python and install[1:4] == ['-m', 'pip', 'install']
  assert 'tensorflow-cpu==2.20.0' in install or 'tensorflow==2.20.0' in install
  for requirement in ('absl-py', 'numpy', 'pandas', 'matplotlib'):
    assert requirement in install
  assert not any('tf_cnn_benchmarks' in part or part == '.' for part in install)
  # Second time: reused, nothing installed.
  calls.clear()
  venvs.ensure_venv('2.20.0', str(tmp_path), io.StringIO(), fake_install)
  assert calls == []
  # A failing pip leaves no ready marker, and matrix goes on and exits 1.
  with pytest.raises(venvs.VenvError, match='2.19.1 failed'):
    venvs.ensure_venv('2.19.1', str(tmp_path), io.StringIO(),
                      lambda command, log: 1 if 'pip' in command else 0)
  assert not os.path.exists(tmp_path / 'tf-2.19.1' / venvs.READY_MARKER)


def test_venv_built_for_older_requirements_gets_the_new_ones(tmp_path):
  calls = []
  fake_install = _recording_install(calls)
  venvs.ensure_venv('2.20.0', str(tmp_path), io.StringIO(), fake_install)
  # The marker a build wrote before it recorded the requirements.
  (tmp_path / 'tf-2.20.0' / venvs.READY_MARKER).write_text('2.20.0\n')
  calls.clear()
  out = io.StringIO()
  venvs.ensure_venv('2.20.0', str(tmp_path), out, fake_install)
  assert 'installing new requirements' in out.getvalue()
  assert calls == venvs.install_commands(
      '2.20.0', str(tmp_path / 'tf-2.20.0'))[-1:]
  calls.clear()
  venvs.ensure_venv('2.20.0', str(tmp_path), io.StringIO(), fake_install)
  assert calls == []


@pytest.mark.parametrize('versions, message', [
    ('', 'is empty'), ('2.20.0,banana', "'banana'"),
])
def test_bad_versions(tmp_path, capsys, versions, message):
  code, _ = _matrix(['--tf_versions', versions, '--result_dir', tmp_path, '--',
                     '--model=trivial'])
  assert code == 2
  assert message in capsys.readouterr().err


# The oldest TensorFlow the harness supports (setup.cfg's extras say
# tensorflow-cpu>=2.12), at its latest patch release. Its wheels stop at
# Python 3.11.
OLDEST_SUPPORTED = '2.12.1'


def test_oldest_supported_matches_setup_cfg():
  import configparser  # pylint: disable=g-import-not-at-top
  parser = configparser.ConfigParser()
  parser.read(os.path.join(venvs.REPO_ROOT, 'setup.cfg'))
  floors = re.findall(r'tensorflow[-\w\[\]]*>=([\d.]+)',
                      parser.get('options.extras_require', 'cpu'))
  assert floors and all(OLDEST_SUPPORTED.startswith(f + '.') for f in floors)


@pytest.mark.slow   # a venv build when not cached (~2 min), then 2 runs
@pytest.mark.skipif(sys.version_info >= (3, 12),
                    reason='TensorFlow 2.12 has no wheels past Python 3.11')
def test_oldest_and_newest_supported_tensorflow_run_the_trivial_model(
    tmp_path):
  """The CI guard of the version table in README: the harness runs on the
  oldest supported release (a real venv from the package index, cached in
  the default place, built with pip's configuration) and on the newest
  (this interpreter's)."""
  code, out = _matrix(['--tf_versions', '%s,current' % OLDEST_SUPPORTED,
                       '--result_dir', tmp_path, '--timeout', '600', '--',
                       '--model=trivial', '--num_batches=5',
                       '--num_warmup_batches=1', '--device=cpu'])
  assert code == 0, out
  frame = store.load_runs([tmp_path]).sort_values('label')
  assert sorted(frame['environment.tf_version']) == sorted(
      [OLDEST_SUPPORTED, INSTALLED])
  assert sorted(frame['label']) == sorted(['tf-' + OLDEST_SUPPORTED,
                                           'tf-%s' % INSTALLED])
  assert (frame['summary.images_per_sec'] > 0).all()


def test_release_candidates_are_versions():
  assert venvs.parse_versions('2.21.0rc1, 2.21.0-rc1,2.20.0') == [
      '2.21.0rc1', '2.21.0-rc1', '2.20.0']


def test_installed_version_matches_however_it_is_spelled(monkeypatch):
  monkeypatch.setattr(venvs, 'installed_tf_version', lambda: '2.21.0rc1')
  assert venvs.uses_current_interpreter('2.21.0-rc1')
  assert not venvs.uses_current_interpreter('2.21.0')


def test_runtime_requirements_leave_tensorflow_to_the_version_pin(tmp_path):
  setup_cfg = tmp_path / 'setup.cfg'
  setup_cfg.write_text('\n'.join([
      '[options]', 'install_requires =',
      '    tensorflow-cpu>=2.12; platform_machine != "aarch64"',
      '    TensorFlow>=2.12; platform_machine == "aarch64"',
      '    tf-nightly', '    numpy-financial', '    Absl_Py>=1.0',
      '    pandas[performance]>=2', '    tomli; python_version < "3.11"', '']))
  assert venvs.runtime_requirements(str(setup_cfg)) == [
      'numpy-financial', 'Absl_Py>=1.0', 'pandas[performance]>=2',
      'tomli; python_version < "3.11"', 'numpy']


def test_test_environment_reaches_only_the_named_versions_runs(tmp_path,
                                                               monkeypatch):
  """Test-only: a version's runs get its variables (here the injected
  slowdown, which their records then carry); the other version's do not,
  and the cached venv itself is left as it was."""
  _fake_venv(tmp_path / 'venvs', '9.9.0')
  monkeypatch.setenv(venvs.TEST_ENV_VAR,
                     '{"9.9.0": {"TF_CNN_BENCHMARKS_TEST_SLOWDOWN": "0.5"}}')
  code, out = _matrix(['--tf_versions', 'current,9.9.0', '--result_dir',
                       tmp_path / 'runs', '--venv_dir', tmp_path / 'venvs',
                       '--benchmark_script', FAKE_BENCHMARK, '--',
                       '--model=trivial'])
  assert code == 0, out
  frame = store.load_runs([tmp_path / 'runs'])
  slowed = dict(zip(frame['label'], frame['injected_slowdown']))
  assert slowed['tf-9.9.0'] == 0.5
  assert pd.isna(slowed['tf-%s' % INSTALLED])   # a real run
  assert sorted(os.listdir(tmp_path / 'venvs' / 'tf-9.9.0')) == sorted([
      'bin', venvs.READY_MARKER])


@pytest.mark.parametrize('value, message', [
    ('2.20.0=0.5', 'is not JSON'),
    ('["2.20.0"]', 'not an object of objects'),
    ('{"2.20.0": {"LD_PRELOAD": "x.so"}}', "sets 'LD_PRELOAD'"),
    ('{"2.20.0": {"TF_CNN_BENCHMARKS_TEST_SLOWDOWN": 0.5}}', 'string values'),
])
def test_test_environment_refuses_anything_but_test_switches(value, message):
  with pytest.raises(UsageError, match=message):
    venvs.test_environment('2.20.0', {venvs.TEST_ENV_VAR: value})


def test_test_environment_matches_versions_as_versions():
  environ = {venvs.TEST_ENV_VAR:
             '{"2.21.0-rc1": {"TF_CNN_BENCHMARKS_TEST_SLOWDOWN": "0.1"}}'}
  assert venvs.test_environment('2.21.0rc1', environ) == {
      'TF_CNN_BENCHMARKS_TEST_SLOWDOWN': '0.1'}
  assert venvs.test_environment('2.21.0', environ) == {}
  assert venvs.test_environment('2.21.0', {}) == {}


def test_venvs_install_a_pinned_pip():
  """An unpinned `pip install --upgrade pip` built each venv with whatever
  pip was newest that day."""
  commands = venvs.install_commands('2.20.0', '/tmp/v')
  pip_steps = [c for c in commands if 'pip' in c and 'install' in c and
               any(a.startswith('pip') for a in c[4:])]
  assert pip_steps and all(venvs.PIP_REQUIREMENT in c for c in pip_steps)
  assert venvs.PIP_REQUIREMENT.startswith('pip==')
  assert not any('--upgrade' in c for c in commands)


def test_the_record_names_the_tensorflow_files_by_their_hash():
  import hashlib  # pylint: disable=g-import-not-at-top
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.measure import versions  # pylint: disable=g-import-not-at-top
  record = metadata.distribution(versions.tf_distribution()).read_text(
      'RECORD')
  assert versions.tf_files_sha256() == hashlib.sha256(
      record.encode()).hexdigest()
