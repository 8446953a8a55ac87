"""glibc malloc settings (--tune_malloc), applied before TensorFlow loads.

Why: every step allocates and frees the same large tensors (the gradients
a ps receives, the variables it sends, a worker's copies of them, a decoded
batch). glibc hands freed memory at the top of a heap back to the kernel
once it exceeds the trim threshold (a few MB by default), and the next step
faults every page of it back in, zeroed. In a perf profile of the loopback
ps cluster (trivial model, 16 MB logits), page faults and madvise took
18-22% of the ps's CPU, in our harness and in the original alike; keeping
the freed memory raised the cluster's images/sec by a quarter or more
(PERFORMANCE.md, "The allocator").

mallopt() may be called at any time and governs the allocations made after
it, so benchmark_main calls this before TensorFlow loads. A setting the
user exported (MALLOC_*_ or glibc.malloc.* in GLIBC_TUNABLES) is kept: an
allocator tuned on purpose is the likelier intent. Without glibc (musl), or
with another allocator preloaded (tcmalloc, jemalloc: their mallopt ignores
these), nothing changes.

No TensorFlow here.
"""

import ctypes
import os

# mallopt parameters (glibc's malloc.h).
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3

# (name, mallopt parameter, value, environment variable, GLIBC_TUNABLES name)
SETTINGS = (
    # Keep up to 1 GiB free at a heap's top instead of returning it.
    ('trim_threshold', M_TRIM_THRESHOLD, 1 << 30, 'MALLOC_TRIM_THRESHOLD_',
     'glibc.malloc.trim_threshold'),
    # Blocks up to 32 MiB (glibc's largest allowed threshold) come from the
    # heaps, so freeing them keeps them; larger ones are still mapped and
    # unmapped each time.
    ('mmap_threshold', M_MMAP_THRESHOLD, 1 << 25, 'MALLOC_MMAP_THRESHOLD_',
     'glibc.malloc.mmap_threshold'),
    # Grow a heap by 64 MiB more than asked: fewer, larger growths.
    ('top_pad', M_TOP_PAD, 1 << 26, 'MALLOC_TOP_PAD_',
     'glibc.malloc.top_pad'),
)


def _glibc():
  """This process's C library if it is glibc, else None."""
  libc = ctypes.CDLL(None)
  if not hasattr(libc, 'gnu_get_libc_version'):
    return None
  libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
  libc.mallopt.restype = ctypes.c_int
  return libc


# What apply() did in this process, for the report's header (describe):
# None before it ran, else (words why nothing was set or None, {name:
# value} set, [the user's own settings kept]).
_outcome = None


def apply(enabled, environ=None):
  """Applies SETTINGS when ``enabled``; returns {name: value} applied."""
  global _outcome
  environ = os.environ if environ is None else environ
  libc = _glibc() if enabled else None
  if libc is None:
    _outcome = ('--tune_malloc=false' if not enabled else
                'not glibc: left as it is', {}, [])
    return {}
  tunables = environ.get('GLIBC_TUNABLES', '')
  applied, kept = {}, []
  for name, parameter, value, variable, tunable in SETTINGS:
    if variable in environ or tunable + '=' in tunables:
      kept.append(name)
    elif libc.mallopt(parameter, value) == 1:
      applied[name] = value
  _outcome = (None, applied, kept)
  return applied


def describe():
  """The report's words for what this process's allocator keeps."""
  if _outcome is None:
    return 'not set (malloc_tuning.apply was not called)'
  why_not, applied, kept = _outcome
  if why_not:
    return 'C library defaults (%s)' % why_not
  words = []
  if applied:
    words.append('glibc keeps freed memory (--tune_malloc: %s)' % ', '.join(
        '%s %d MiB' % (name, value >> 20) for name, value in applied.items()))
  if kept:
    words.append('yours kept: %s' % ', '.join(kept))
  return '; '.join(words)
