"""--tune_malloc: glibc keeps the memory a step frees, so the next step does
not fault it back in (tf_cnn_benchmarks/process/malloc_tuning.py)."""

import subprocess
import sys

import pytest

from tests.driver_helpers import REPO
from tf_cnn_benchmarks.process import malloc_tuning

# A step's pattern in small: three 16 MB tensors (a trivial model's logits
# gradient, say) allocated, written and freed together, five times over;
# prints the page faults of the last four rounds.
_ROUNDS = r'''
import ctypes, resource, sys
from tf_cnn_benchmarks.process import malloc_tuning
malloc_tuning.apply(sys.argv[1] == 'on')
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
size = 16 << 20
def step():
  blocks = [libc.malloc(size) for _ in range(3)]
  for block in blocks:
    ctypes.memset(block, 1, size)
  for block in blocks:
    libc.free(block)
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(4):
  step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
'''


def _faults(setting):
  out = subprocess.run([sys.executable, '-c', _ROUNDS, setting], cwd=REPO,
                       capture_output=True, text=True, timeout=60,
                       env={'PATH': '/usr/bin:/bin'})
  assert out.returncode == 0, out.stderr
  return int(out.stdout)


@pytest.mark.skipif(malloc_tuning._glibc() is None, reason='needs glibc')  # pylint: disable=protected-access
def test_freed_memory_is_reused_without_page_faults():
  untuned, tuned = _faults('off'), _faults('on')
  # Untuned, glibc gives the 48 MB back each round and faults in ~12k pages
  # each time; tuned, the rounds reuse it.
  assert untuned > 20000, untuned
  assert tuned < untuned / 20, (tuned, untuned)


@pytest.mark.skipif(malloc_tuning._glibc() is None, reason='needs glibc')  # pylint: disable=protected-access
def test_the_settings_are_the_documented_ones():
  """README: trim threshold 1 GiB, mmap threshold 32 MiB, top pad 64 MiB.
  (The page-fault test above cannot tell them apart: the top pad alone
  keeps its 48 MB.)"""
  assert malloc_tuning.apply(True, environ={}) == {
      'trim_threshold': 1 << 30, 'mmap_threshold': 32 << 20,
      'top_pad': 64 << 20}


def test_a_setting_of_your_own_is_kept():
  applied = malloc_tuning.apply(True, environ={
      'MALLOC_TOP_PAD_': '0',
      'GLIBC_TUNABLES': 'glibc.malloc.trim_threshold=0'})
  assert applied == ({'mmap_threshold': 1 << 25}
                     if malloc_tuning._glibc() else {})  # pylint: disable=protected-access
  assert malloc_tuning.describe().endswith(
      'yours kept: trim_threshold, top_pad')
  assert malloc_tuning.apply(False) == {}
  assert malloc_tuning.describe() == 'C library defaults (--tune_malloc=false)'
