"""What went wrong with a run, in one dict and a few printed lines.

A run's failure is a dict {type, message, task, hint} (the record's
``failure``). ``describe`` makes it from the exception that ended the run
(TensorFlow's long messages cut to the line that matters, an out-of-memory
hint, a data error named by file); ``report_lines`` prints it. A cluster
task may already have found the root cause in a peer
(cluster/watch/peer_failures.py); that wins. Every failing cluster task prints
``Root cause: <task> (<type>)`` last, which the launcher reads to name the
first failure. TensorFlow is imported only where it is needed: the launcher
uses this module too.
"""

import re
import unicodedata

ROOT_CAUSE_PREFIX = 'Root cause: '
ROOT_CAUSE_RE = re.compile(r'^Root cause: (\S+) \(([^)]*)\)')
_SHAPE_RE = re.compile(r'shape\s*\[([0-9, ]+)\]')
# "UNAVAILABLE: From /job:..." -> "From /job:...".
_CODE_PREFIX_RE = re.compile(r'^[A-Z_]+: (?=From /job:)')


def failure(type_name, message, task=None, hint=None):
  return {'type': type_name, 'message': message, 'task': task, 'hint': hint}


# Control characters, and the characters str.splitlines breaks lines at.
_UNPRINTABLE = ('Cc', 'Zl', 'Zp')


def printable(text):
  """``text`` as one line: control characters and line breaks escaped
  (a newline as \\n, ESC as \\x1b, U+2028 as \\u2028).

  For words that come from elsewhere and are printed as part of ours (a
  peer's failure note: whoever can reach the board's host can write it):
  a newline in them would print a line of its own, which the launcher
  would read as this task's (a root cause, a guard's marked line).
  """
  return ''.join(
      c if unicodedata.category(c) not in _UNPRINTABLE else
      c.encode('unicode_escape').decode('ascii') for c in str(text))


# Lines of a TensorFlow error message that say nothing about the error.
_NOISE_PREFIXES = ('Graph execution error', 'Detected at node', '[[',
                   'Node:', 'File ', 'Additional GRPC error')


def first_line(exc):
  """The line of an error message that says what went wrong.

  TensorFlow 2.x messages open with "Graph execution error:" and a graph
  traceback; the error itself comes after (prefixed by the task it came
  from, "From /job:...:", when it crossed tasks).
  """
  message = getattr(exc, 'message', None) or str(exc)
  lines = [_CODE_PREFIX_RE.sub('', l.strip())
           for l in message.strip().splitlines() if l.strip()]
  useful = [l for l in lines if not l.startswith(_NOISE_PREFIXES) and
            l.strip('=')]
  if not useful:
    return lines[0] if lines else repr(exc)
  if useful[0].startswith('From /job:') and len(useful) > 1:
    return '%s (%s)' % (useful[1], useful[0].rstrip(':').lower())
  return useful[0]


# A write failed for want of space (ENOSPC, EDQUOT), whatever the error's
# class: TensorFlow raises ResourceExhausted, Python OSError.
_DISK_FULL_PHRASES = ('No space left on device', 'Disk quota exceeded')
DISK_FULL_HINT = ('A disk this run writes to is full (the file named above: '
                  'a checkpoint under --train_dir, a record under '
                  '--result_dir, a trace or log); free space there or point '
                  'that flag at another disk.')


# "OOM when allocating tensor with shape[64,112,112,64] and type float on
# /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc".
_OOM_RE = re.compile(r'shape\s*\[([0-9, ]*)\](?: and type (\w+))?'
                     r'(?: on \S*?device:(\w+:\d+))?')
# Bytes per element of the dtypes TensorFlow names in that message.
_DTYPE_BYTES = {'float': 4, 'half': 2, 'bfloat16': 2, 'double': 8,
                'int8': 1, 'uint8': 1, 'int16': 2, 'int32': 4, 'int64': 8,
                'bool': 1, 'complex64': 8, 'complex128': 16}


def byte_size(num_bytes):
  """'512.0 MiB', '14.80 GiB'."""
  if num_bytes >= 1 << 30:
    return '%.2f GiB' % (num_bytes / float(1 << 30))
  return '%.1f MiB' % (num_bytes / float(1 << 20))


def oom_hint(rc, message, peak_on=None):
  """Out of memory: on which device, how much was asked for, the peak so
  far there, and a smaller batch to try. ``peak_on(device)``: that
  device's peak bytes so far (measure/memory.py), or None."""
  match = _OOM_RE.search(message or '')
  shape, dtype, device = match.groups() if match else (None, None, None)
  lead = 'Out of memory' + (' on %s' % device if device else '')
  if shape is not None and dtype in _DTYPE_BYTES:
    elements = 1
    for dim in shape.split(','):
      elements *= int(dim or 1)
    lead += ': TensorFlow asked for %s more (shape [%s], %s)' % (
        byte_size(elements * _DTYPE_BYTES[dtype]), shape, dtype)
  elif shape is not None:
    lead += ' (the allocation that failed: shape [%s])' % shape
  if rc.model.reads_ids:  # ncf: no image size to name
    batch = '%d examples per device' % rc.batch_size_per_device
  else:
    size = rc.model.image_size
    height, width = size if isinstance(size, (tuple, list)) else (size, size)
    batch = '%d images per device of %dx%d' % (rc.batch_size_per_device,
                                                height, width)
  peak = peak_on(device or 'CPU:0') if peak_on else None
  if not peak:
    peak_text = ''
  elif (device or '').upper().startswith('GPU'):
    peak_text = '; TensorFlow\'s peak so far on %s was %s' % (
        device, byte_size(peak))
  else:  # the host's memory: the whole process's
    peak_text = '; this process\'s peak RSS so far was %s' % byte_size(peak)
  return '%s with %s%s; try --batch_size=%d.' % (
      lead, batch, peak_text, max(1, rc.batch_size_per_device // 2))


def describe(exc, rc, peak_on=None):
  """The failure of this task's run, from the exception that ended it.

  A cluster task's failure path may already have found the root cause in
  a peer (``exc.root_cause``); that wins. ``peak_on``: as oom_hint's.
  """
  root = getattr(exc, 'root_cause', None)
  if root is not None:
    return root
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import preprocessing  # pylint: disable=g-import-not-at-top
  task = rc.cluster.task_name if rc.cluster is not None else None
  # A wait that timed out names the peers it waited for: the first is the
  # task at fault.
  missing = getattr(exc, 'missing', None)
  if missing:
    task = missing[0]
  explain = getattr(preprocessing, 'explain_data_error', None)
  if explain is not None and rc.params.data_dir:
    data_error = explain(exc)
    if data_error is not None:
      return failure('DataError', str(data_error), task)
  hint = None
  message = first_line(exc)
  full_text = getattr(exc, 'message', None) or str(exc)
  if any(phrase in full_text for phrase in _DISK_FULL_PHRASES):
    # TensorFlow reports a full disk as ResourceExhausted too: not memory.
    hint = DISK_FULL_HINT
  elif isinstance(exc, tf.errors.ResourceExhaustedError):
    hint = oom_hint(rc, full_text, peak_on)
  return failure(type(exc).__name__, message, task, hint)


def report_lines(run_failure, status='failed'):
  """The lines every task prints for its failure (and the launcher reads)."""
  if status == 'interrupted':
    # Whether the partial results were recorded is said by the record's
    # own line ("Run record: ..." or "Could not write ..."), written after
    # this one: never claimed here in advance.
    lines = ['Interrupted: %s.' % run_failure['message']]
  else:
    lead = 'Run stalled' if status == 'stalled' else 'Run failed'
    lines = ['%s: %s' % (lead, run_failure['message'])]
  if run_failure.get('hint'):
    lines.append('Hint: %s' % run_failure['hint'])
  if run_failure.get('task'):
    lines.append('%s%s (%s)' % (ROOT_CAUSE_PREFIX, run_failure['task'],
                                run_failure['type']))
  return lines
