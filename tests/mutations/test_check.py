"""The mutation check itself, on a tiny tree of its own: a breakage its
guard catches is killed, one it misses is reported as surviving (and fails
the check, by name), a guard that is skipped leaves it unchecked, and a
breakage whose text left its file fails the check before anything runs."""

import sys
import textwrap

from tests.mutations import check
from tests.niced_timeouts import wall_bound

_CODE = textwrap.dedent('''\
    def mean(values):
      return sum(values) / len(values)


    def first(values):
      return values[0]
''')
_TESTS = textwrap.dedent('''\
    import pytest
    import code_under_test


    def test_mean():
      assert code_under_test.mean([1, 3]) == 2


    def test_first_of_one():
      assert code_under_test.first([5]) == 5


    def test_needs_a_tool():
      pytest.skip('no such tool here')
''')
_CAUGHT = check.Breakage('caught', 'code_under_test.py', '/ len(values)',
                         '/ 1', ('test_it.py::test_mean',), 'sums')
_MISSED = check.Breakage('missed', 'code_under_test.py', 'values[0]',
                         'values[-1]', ('test_it.py::test_first_of_one',),
                         'last instead of first')
_SKIPPED = check.Breakage('skipped', 'code_under_test.py', 'values[0]',
                          'values[1]', ('test_it.py::test_needs_a_tool',),
                          'second instead of first')
_ROTTEN = check.Breakage('rotten', 'code_under_test.py', 'median(values)',
                         'mode(values)', ('test_it.py::test_mean',), 'gone')


def _tree(tmp_path):
  (tmp_path / 'code_under_test.py').write_text(_CODE)
  (tmp_path / 'test_it.py').write_text(_TESTS)
  return str(tmp_path)


def test_a_breakage_its_guard_misses_is_reported_as_surviving(tmp_path):
  root = _tree(tmp_path)
  said = []
  outcomes = check.check([_CAUGHT, _MISSED, _SKIPPED], jobs=2,
                         timeout=wall_bound(120),
                         root=root, say=said.append)
  verdicts = {o.breakage.id: o.verdict for o in outcomes}
  assert verdicts == {'caught': check.KILLED, 'missed': check.SURVIVED,
                      'skipped': check.UNCHECKED}, outcomes
  assert any(line.startswith('SURVIVED  missed') for line in said), said
  # The tree itself is left as it was.
  assert (tmp_path / 'code_under_test.py').read_text() == _CODE


def test_the_check_fails_naming_each_survivor_and_each_rotten_text(
    tmp_path, monkeypatch, capsys):
  root = _tree(tmp_path)
  listing = tmp_path / 'listing'
  listing.mkdir()
  (listing / 'some_breakages.py').write_text(
      'from tests.mutations.check import Breakage\n'
      'BREAKAGES = (%r, %r)\n' % (_CAUGHT, _MISSED))
  (listing / 'rotten_breakages.py').write_text(
      'from tests.mutations.check import Breakage\n'
      'BREAKAGES = (%r, %r)\n' % (_CAUGHT, _ROTTEN))
  monkeypatch.setattr(sys, 'path', [str(listing)] + sys.path)
  assert check.main(['--breakages', 'some_breakages', '--root', root]) == 1
  out = capsys.readouterr().out
  assert '1 of 2 breakage(s) killed' in out, out
  assert 'SURVIVED: missed (code_under_test.py, last instead of first)' in out
  assert check.main(['--breakages', 'rotten_breakages', '--root',
                     root]) == 1
  out = capsys.readouterr().out
  assert 'rotten: its text is in code_under_test.py 0 times' in out, out
  assert 'Mutation check:' not in out  # nothing ran
  assert check.main(['--breakages', 'some_breakages', '--root', root,
                     '--only', 'caught']) == 0


def test_every_breakage_of_the_list_still_matches_the_code():
  """The real list, checked in the suite (seconds) rather than only when
  the mutation check starts, after the suite: a change that moves a
  breakage's text is then caught by the test it changed with."""
  assert check.rotten(check.load('tests.mutations.breakages')) == []
