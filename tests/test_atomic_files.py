"""basics/atomic_files.py: a record or shard is whole or absent, never half
written (RELIABILITY.md, guarantee 6)."""

import os

import pytest

from basics import atomic_files


def test_a_write_that_fails_leaves_the_old_file_whole(tmp_path, monkeypatch):
  """A write that dies before its end (here: the disk refuses the flush,
  as a full disk or a crash would) leaves the previous file as it was and
  no temporary beside it; the next write replaces it whole."""
  path = tmp_path / 'run.json'
  atomic_files.write_text_atomically(str(path), '{"old": 1}')

  def refuse(fd):
    raise OSError(28, 'No space left on device')

  monkeypatch.setattr(os, 'fsync', refuse)
  with pytest.raises(OSError, match='No space left'):
    atomic_files.write_text_atomically(str(path), '{"new": 2, "x": "%s"}' %
                                       ('y' * 100000))
  assert path.read_text() == '{"old": 1}'
  assert os.listdir(tmp_path) == ['run.json']
  monkeypatch.undo()
  atomic_files.write_text_atomically(str(path), '{"new": 2}')
  assert path.read_text() == '{"new": 2}'
  assert os.listdir(tmp_path) == ['run.json']
