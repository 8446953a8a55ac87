"""DataError: bad input data, explained in one paragraph.

Two kinds of checks exist. Those possible before the graph runs (directory
missing, no shards, unreadable CIFAR batch) raise DataError directly. Those
only possible while reading (corrupt record, non-JPEG image, label out of
range) happen inside tf.data, where Python cannot see which file is being
read. The checked reader (checked_reading) fails a `tf.debugging.Assert`
whose message carries a marker with the error code, file and record index
(see `marker_data`). The fast pipeline the sources run names no file: its
errors are TensorFlow's own, or a marker without a record (index -1);
`explain_data_error` then has the record found by re-reading the shards
with the checked reader (diagnosis). Either way it turns the TensorFlow
error that surfaces from `Session.run` back into a DataError.
"""

import re

import tensorflow as tf

# Error codes carried through the pipeline with each element. 0 = fine.
OK = 0
# The TFRecord reader stopped before the end of the shard: a record's length
# or checksum is wrong, or the file is truncated.
CORRUPT_RECORD = 1
# The record was read but could not be parsed as a tf.train.Example, or its
# image could not be decoded or preprocessed.
UNDECODABLE = 2
# image/encoded does not start with the JPEG signature (PNG, GIF, empty...).
NOT_JPEG = 3
# image/class/label is missing or outside [0, num_classes).
BAD_LABEL = 4
# Not an error: a marker element (end of a shard or an epoch) that goes
# through the checks and is then dropped (see checked_reading).
SKIP = -1

_REASONS = {
    CORRUPT_RECORD: (
        'the TFRecord is corrupt or truncated at this record (its length or '
        'checksum does not match, or the file ends early)',
        'Re-copy or rebuild the shard (e.g. with `tf_cnn_benchmarks '
        'build-dataset`), or move it out of the data directory.'),
    UNDECODABLE: (
        'the record could not be parsed as a tf.train.Example, or its image '
        'could not be decoded or preprocessed (a truncated or damaged JPEG, '
        'or invalid bounding boxes)',
        'Rebuild the shard from the original images; `tf_cnn_benchmarks '
        'build-dataset` decodes every image and refuses bad ones.'),
    NOT_JPEG: (
        'image/encoded is not a JPEG image (it lacks the JPEG signature; '
        'PNG, GIF or an empty string?)',
        'Convert the image to JPEG when building the shard; '
        '`tf_cnn_benchmarks build-dataset` does that for PNG/GIF/BMP input.'),
    BAD_LABEL: (
        'image/class/label is missing or outside the model\'s range of '
        'class ids',
        'ImageNet labels must be 1..1000 (0 is the background class of the '
        '1001-way head); check the labels file used to build the shards, '
        'or the --data_name and model.'),
}

# tf.debugging.Assert prints each data tensor as "[value]", joined by
# spaces, and only when the assertion fails (so the happy path formats no
# strings). The marker is those printed values between two tags.
_MARKER_START = 'DATA_ERROR_BEGIN'
_MARKER_END = 'DATA_ERROR_END'
_MARKER_RE = re.compile(
    r'\[%s\] \[(-?\d+)\] \[(-?\d+)\] \[(-?\d+)\] \[(.*?)\] \[%s\]'
    % (_MARKER_START, _MARKER_END), re.DOTALL)


class DataError(Exception):
  """Input data that cannot be used, with the file, index and what to do.

  Attributes:
    path: the file (or directory) at fault, or None when not known.
    index: the record index within that file, or None when not known.
  """

  def __init__(self, message, path=None, index=None):
    super().__init__(message)
    self.path = path
    self.index = index


def marker_data(code, path, index, detail):
  """The data list for tf.debugging.Assert that `explain_data_error` reads.

  Args are scalar tensors: int error code, string file, int64 record index,
  int64 detail (UNDECODABLE: how many records just before this one also
  failed; BAD_LABEL: the label found). A check that cannot know the record
  passes index -1 and, for the file, its source's diagnosis token.
  """
  return [_MARKER_START, code, index, detail, path, _MARKER_END]


def describe(code, path, index, detail=0, searched=None):
  """The one-paragraph DataError for an error code seen while reading.

  path None: the record could not be found; searched says where it was
  looked for.
  """
  what, todo = _REASONS.get(code, ('unknown input error %d' % code,
                                    'Check the data directory.'))
  if path is None:
    where = ' a record that re-reading could not pin (%s)' % searched
  elif index is not None and index >= 0:
    where = ' record %d of %s' % (index, path)
  else:
    where = ' ' + path
  more = ''
  if code == UNDECODABLE and detail > 0:
    more = (' (%d more record%s read just before it also failed, so the '
            'damage may be wider)' % (detail, 's' if detail > 1 else ''))
  elif code == BAD_LABEL:
    more = ' (found %d)' % detail
  return DataError('Bad input data in%s: %s%s. %s'
                   % (where, what, more, todo), path=path, index=index)


def located_error(exc):
  """The DataError of a checked reader's marker in exc, or None.

  None also when the marker names no record (the fast pipeline's).
  """
  match = _MARKER_RE.search(getattr(exc, 'message', None) or str(exc))
  if not match or int(match.group(2)) < 0:
    return None
  code, index, detail, path = match.groups()
  return describe(int(code), path, int(index), int(detail))


def may_need_locating(exc):
  """Would explain_data_error re-read shards to find the bad record
  (which may take diagnosis.RESCAN_SECONDS)? Answered at once, without
  reading anything."""
  from preprocessing import diagnosis  # pylint: disable=g-import-not-at-top
  if isinstance(exc, DataError) or located_error(exc) is not None:
    return False
  message = getattr(exc, 'message', None) or str(exc)
  if _MARKER_RE.search(message):
    return True
  return isinstance(exc, (tf.errors.DataLossError,
                          tf.errors.InvalidArgumentError)) and (
                              diagnosis.might_be_data(message))


def explain_data_error(exc):
  """The DataError behind an exception from Session.run, or None.

  Returns `exc` itself when it is already a DataError; a DataError naming
  the file and record when the exception carries the checked reader's
  marker, or when re-reading the shards finds the record (see diagnosis);
  a DataError without a file for other reader/decoder failures
  recognisable as data problems (DataLossError, JPEG/Example parse
  errors), saying what was re-read in vain; None when the exception is not
  about input data, so the caller re-raises it.
  """
  from preprocessing import diagnosis  # pylint: disable=g-import-not-at-top
  if isinstance(exc, DataError):
    return exc
  located = located_error(exc)
  if located is not None:
    return located
  message = getattr(exc, 'message', None) or str(exc)
  match = _MARKER_RE.search(message)
  if match:
    # The fast pipeline's own check knows the batch, not the record.
    code, _, detail, token = match.groups()
    found, searched = diagnosis.locate(exc, token)
    return found or describe(int(code), None, None, int(detail),
                             searched or 'no live input pipeline to re-read')
  if not isinstance(exc, (tf.errors.DataLossError,
                          tf.errors.InvalidArgumentError)):
    return None
  searched = None
  if diagnosis.might_be_data(message):
    found, searched = diagnosis.locate(exc)
    if found is not None:
      return found
  if isinstance(exc, tf.errors.DataLossError) or re.search(
      r'JPEG|jpeg|parse example|Example', message):
    first = _node_message(message)
    return DataError(
        'Bad input data: the input pipeline failed with "%s", in a file it '
        'could not name%s. Check the shards in the data directory (rebuild '
        'them with `tf_cnn_benchmarks build-dataset`).'
        % (first, ' (%s)' % searched if searched else ''))
  return None


def _node_message(message):
  """TensorFlow's own error line, without the graph traceback around it."""
  lines = [l.strip() for l in message.strip().splitlines() if l.strip()]
  for line in reversed(lines):
    if not line.startswith('[[') and not line.startswith('Node:') and \
        not line.startswith('File '):
      return line
  return lines[0] if lines else message
