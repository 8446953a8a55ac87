"""A real `bisect` over three adjacent TensorFlow releases with a known answer.

The releases come from the package index, each runs in its cached venv
(the default cache, so test_matrix's guard and this test share what they
build), and the runs are real benchmark processes of the trivial model. The
answer is made known by the test-only injected slowdown: the venvs of
2.20.0 and 2.21.0 give their runs TF_CNN_BENCHMARKS_TEST_SLOWDOWN (through
venvs.TEST_ENV_VAR), as if TensorFlow had become slower at 2.20.0 and
stayed so. Bisect must name 2.20.0 as the first slower release.
"""

import io
import json
import re

import pytest

from results import store
from results import venvs
from results.bisect import command

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


@pytest.mark.slow   # 18 benchmark processes, one venv build when not cached
def test_bisect_finds_the_release_slowed_on_purpose(tmp_path, monkeypatch):
  monkeypatch.setenv(venvs.TEST_ENV_VAR, json.dumps(
      {version: {'TF_CNN_BENCHMARKS_TEST_SLOWDOWN': FRACTION}
       for version in (SLOWED, BAD)}))
  suite_path = tmp_path / 'suite.toml'
  suite_path.write_text(SUITE)
  out = io.StringIO()
  code = command.main(['bisect', '--good', GOOD, '--bad', BAD, '--suite',
                       str(suite_path), '--result_dir', str(tmp_path / 'runs'),
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
  assert by_label['environment.tf_version'].first().to_dict() == {
      'tf-' + v: v for v in (GOOD, SLOWED, BAD)}
  slowed = by_label['injected_slowdown'].max().fillna(0).to_dict()
  assert slowed == {'tf-' + GOOD: 0, 'tf-' + SLOWED: 4.0, 'tf-' + BAD: 4.0}
