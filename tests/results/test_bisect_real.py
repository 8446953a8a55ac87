"""A real `bisect` over three adjacent TensorFlow releases with a known answer.

The releases come from the package index (pip's own answer, as a user's
bisect asks it) and the runs are real benchmark processes of the trivial
model, run, judged and recorded by the same runner and compare as a
user's. Each release's venv is a stand-in: this interpreter behind the
venv's python (test_matrix's fake venv), so every release runs the
installed TensorFlow. Building real venvs of other releases is
test_matrix's guard (the oldest supported release, from the index); here
it cost CI ~90 s and showed nothing more. The answer is made known by the
test-only injected slowdown: the venvs of 2.20.0 and 2.21.0 give their runs
TF_CNN_BENCHMARKS_TEST_SLOWDOWN (through venvs.TEST_ENV_VAR), as if
TensorFlow had become slower at 2.20.0 and stayed so. Bisect must name
2.20.0 as the first slower release.
"""

import io
import json
import os
import re

import pytest

from results import store
from results import venvs
from results.bisect import command
from tests.results.test_matrix import _fake_venv

GOOD, SLOWED, BAD = '2.19.1', '2.20.0', '2.21.0'
# Each step of the slowed releases idles four times as long as the step
# itself took: images/sec falls to a fifth. On a busy 2-core machine runs of
# the trivial model spread 5x (773 to 3702 images/sec in one 4-run group
# here), and a halving was lost in that; a fifth stays apart, so 6 runs a
# release (a round's runs are pairs, and 6 pairs are the fewest with which
# the paired test can reach p < 0.05) settle it, with up to 12 if not.
FRACTION = '4.0'
SUITE = """
[defaults]
device = "cpu"
num_batches = 50
num_warmup_batches = 2
[[config]]
name = "trivial-32"
model = "trivial"
batch_size = 32
"""


@pytest.mark.slow   # 18 benchmark processes
def test_bisect_finds_the_release_slowed_on_purpose(tmp_path, monkeypatch):
  monkeypatch.setenv(venvs.TEST_ENV_VAR, json.dumps(
      {version: {'TF_CNN_BENCHMARKS_TEST_SLOWDOWN': FRACTION}
       for version in (SLOWED, BAD)}))
  pythons = {version: _fake_venv(tmp_path / 'venvs', version)
             for version in (GOOD, SLOWED, BAD)
             if version != venvs.installed_tf_version()}
  suite_path = tmp_path / 'suite.toml'
  suite_path.write_text(SUITE)
  out = io.StringIO()
  code = command.main(['bisect', '--good', GOOD, '--bad', BAD, '--suite',
                       str(suite_path), '--result_dir', str(tmp_path / 'runs'),
                       '--venv_dir', str(tmp_path / 'venvs'),
                       '--repeat', '6', '--max_repeat', '12', '--timeout',
                       '600', '--allow_injected_slowdown'], stream=out)
  text = out.getvalue()
  assert code == command.EXIT_FOUND, text
  assert 'from %s (good) to %s (bad): %s %s %s' % (GOOD, BAD, GOOD, SLOWED,
                                                   BAD) in text
  assert '%s against both ends' % SLOWED in text
  # (If 2.21.0 is slower than 2.20.0 by itself, the line says so too.)
  assert re.search(r'=> %s is slower than %s, so it is bad.*; found$' % (
      re.escape(SLOWED), re.escape(GOOD)), text, re.M), text
  found = re.search(r'trivial-32: first slower in %s \(the release after '
                    r'%s\): ([-+\d.]+)%% \[([-+\d.]+)%%, ([-+\d.]+)%%\]'
                    % (re.escape(SLOWED), re.escape(GOOD)), text)
  assert found, text
  size, low, high = map(float, found.groups())
  assert low <= size <= high < 0 and size < -40, text   # about -80%
  # Every run is kept, labelled by its release, the slowed ones marked.
  frame = store.load_runs([tmp_path / 'runs'])
  assert set(frame['status']) == {'ok'}
  by_label = frame.groupby('label')
  counts = by_label.size().to_dict()
  assert sorted(counts) == ['tf-' + v for v in (GOOD, SLOWED, BAD)]
  assert len(set(counts.values())) == 1 and 6 <= counts['tf-' + GOOD] <= 12
  # Each release's runs ran under its own venv's python.
  logs = tmp_path / 'runs' / 'logs'
  commands = [(logs / name).read_text().splitlines()[0]
              for name in os.listdir(logs)]
  for version, python in pythons.items():
    own = [c for c in commands if '--label=tf-%s' % version in c]
    assert own and all(c.startswith('$ %s ' % python) for c in own), (
        version, python, own[:1])
  slowed = by_label['injected_slowdown'].max().fillna(0).to_dict()
  assert slowed == {'tf-' + GOOD: 0, 'tf-' + SLOWED: 4.0, 'tf-' + BAD: 4.0}
