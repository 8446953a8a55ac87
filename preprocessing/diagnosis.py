"""Finding the bad record after the fast pipeline failed on one.

The ImageNet pipeline reads at full speed: no per-element identity, so
TensorFlow's errors there name no file ("corrupted record at 128", "Invalid
JPEG data"). Only when such an error surfaces is the record found, by
re-reading shards with the checked reader (checked_reading), which names
file and record exactly as it always did. That costs nothing until
something goes wrong.

Which shards: a per-*shard* side channel (`ShardLog`) notes each shard as
the fast pipeline opens it, so the re-scan starts with the most recently
opened ones (the failing record was read from one of them, give or take
the shuffle buffer) and goes on to the rest. It stops after
`RESCAN_SECONDS`; the DataError then says it could not pin the record.

Sources register here when they build a fast pipeline; `locate`, called
by `errors.explain_data_error`, asks the live ones, most recently active
first, to re-scan.
"""

import itertools
import threading
import time
import weakref

import tensorflow as tf

# How long a re-scan may take (it runs once, on the failure path; a
# 1024-shard ImageNet cannot be re-read whole in any sensible time).
RESCAN_SECONDS = 120.0

# Words of a TensorFlow error that may come from reading or decoding input
# (a model's own failures, e.g. a NaN check, never re-scan the data).
DATA_WORDS = ('jpeg', 'jpg', 'png', 'gif', 'decode', 'example', 'record',
              'data_error')

# A collective abort carries a *peer's* error: this task's data is not at
# fault, so re-reading it would only delay the report.
_PEER_WORDS = 'Collective ops is aborted'

_order = itertools.count()


class ShardLog:
  """The shards a pipeline has opened, most recently opened first."""

  def __init__(self):
    self._lock = threading.Lock()
    self._opened = {}  # path -> order of its latest opening
    self.last_opened = -1

  def note(self, path):
    with self._lock:
      self.last_opened = next(_order)
      self._opened[path] = self.last_opened

  def reader(self, read_file):
    """read_file(path, *args), noting `path` each time a shard is opened.

    One Python call per shard opened (not per record), through the path
    tensor itself so tf.data cannot prune it.
    """
    def note(path):
      self.note(path.numpy().decode('utf-8'))
      return path

    def read(path, *args):
      noted = tf.py_function(note, [path], tf.string, name='note_shard')
      noted.set_shape(path.shape)
      return read_file(noted, *args)
    return read

  def newest_first(self, paths):
    """paths reordered: opened ones newest first, then the others."""
    with self._lock:
      opened = dict(self._opened)
    return sorted(paths, key=lambda p: -opened.get(p, -1))


_sources = []  # weak references, in registration order
_lock = threading.Lock()


def register(source):
  """Makes source.locate_bad_record(deadline) reachable from `locate`.

  It returns (DataError or None, shards re-read, shards it has). source
  also has `token` (a string its own checks put in their marker) and
  `shard_log`.
  """
  with _lock:
    _sources[:] = [r for r in _sources if r() is not None]
    _sources.append(weakref.ref(source))


def might_be_data(message):
  lowered = message.lower()
  return any(word in lowered for word in DATA_WORDS)


def locate(exc, token=None):
  """(DataError naming the bad record, or None; what was re-scanned).

  token: the source whose check failed, when the error says (a marker);
  else every live source that has opened shards, most recently active
  first, re-scans until one finds a bad record or time runs out. The
  second value says what was searched in vain (None when nothing could
  be). The result is remembered on exc, so describing it twice re-scans
  once.
  """
  cached = getattr(exc, '_located_data_error', None)
  if cached is not None:
    return cached
  message = getattr(exc, 'message', None) or str(exc)
  if _PEER_WORDS in message:
    return _remember(exc, (None, 'it came from another task'))
  found, searched = None, None
  start = time.monotonic()
  deadline = start + RESCAN_SECONDS
  scanned = total = 0
  for source in _candidates(token):
    found, done, count = source.locate_bad_record(deadline)
    scanned += done
    total += count
    if found is not None:
      break
  took = time.monotonic() - start
  if found is None and scanned < total:
    searched = ('re-read %d of the %d shards, most recently opened first, '
                'in %.0f s, the time limit' % (scanned, total, took))
  elif found is None and total:
    searched = ('re-read all %d shards in %.0f s and found no bad record: '
                'the failure comes and goes (a flaky disk or network file '
                'system?)' % (total, took))
  return _remember(exc, (found, searched))


def _remember(exc, result):
  try:
    exc._located_data_error = result  # pylint: disable=protected-access
  except AttributeError:
    pass
  return result


def _candidates(token):
  with _lock:
    live = [s for s in (r() for r in _sources) if s is not None]
  if token:
    return [s for s in live if s.token == token]
  live = [s for s in live if s.shard_log.last_opened >= 0]
  return sorted(live, key=lambda s: -s.shard_log.last_opened)
