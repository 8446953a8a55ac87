"""A cluster task that reads CIFAR-10 leaves no temporary files (issue 29,
G): the batches are rewritten as one binary file for tf.data, and a task
leaves by os._exit, past every atexit handler."""

import os
import subprocess
import sys

import pytest

from preprocessing import generated_data
from tests.cluster import helpers

pytestmark = pytest.mark.cluster


@pytest.mark.timeout(300)
def test_a_cifar_cluster_leaves_no_temporary_files(tmp_path):
  data = generated_data.make_cifar_batches(str(tmp_path / 'cifar'))
  temp = tmp_path / 'tmp'
  temp.mkdir()
  env = dict(helpers.child_env(), TMPDIR=str(temp))
  done = subprocess.run(
      [sys.executable, helpers.SCRIPT, 'launch', '--ps', '1', '--workers',
       '1', '--'] + helpers.tiny_flags(
           str(tmp_path / 'runs'), variable_update='parameter_server',
           data_dir=data),
      cwd=helpers.REPO, capture_output=True, text=True, timeout=240,
      env=env, stdin=subprocess.DEVNULL)
  out = done.stdout + done.stderr
  assert done.returncode == 0, out
  assert 'Dataset:     cifar10' in out, out
  # TensorFlow's autograph leaves its own small __autograph_generated_file
  # modules in TMPDIR; everything else is the harness's.
  left = [os.path.join(d, n) for d, dirs, names in os.walk(temp)
          for n in names + dirs if not n.startswith('__autograph_generated')]
  assert not left, left
