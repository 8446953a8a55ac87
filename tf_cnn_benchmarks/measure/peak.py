"""This machine's peak GFLOP/s, measured in this TensorFlow, cached per host.

Peak = the best of micro-benchmarks run the way the harness runs models (a
tf.compat.v1 Session with default thread pools): a large matrix multiply and
two large 3x3 convolutions (oneDNN's best case on a CPU; which shape it
runs fastest differs between float32 and bfloat16, hence two). Each is
timed several times after a warm-up and the fastest run counts: a peak is
what the machine *can* do, and noise only ever lowers a measurement.

Measuring takes a few seconds, so the result is cached in a small JSON file
(``$XDG_CACHE_HOME`` or ``~/.cache``, then
``tf_cnn_benchmarks/peak_gflops.json``) keyed by everything that changes it:
TensorFlow version, CPU model, usable cores, oneDNN on/off, compute dtype.

A measurement taken while other processes used the CPU is too low. So each
measurement also records the share of the machine that *other* processes
used meanwhile (cpu_share.py); a contended
entry is measured again on a later run (at most every RETRY_CONTENDED_SEC)
and the cache keeps the best value seen.
"""

import json
import os
import platform
import time

import tensorflow as tf

from basics import atomic_files
from tf_cnn_benchmarks.measure import cpu_share
from tf_cnn_benchmarks.measure import environment

tf1 = tf.compat.v1

# [n, k] x [k, m]: big enough that the kernel, not the call, dominates.
MATMUL_SHAPE = (3072, 3072, 3072)
# [batch, size, size, channels] inputs of 3x3 SAME convolutions with
# `filters` outputs: a ResNet stage-1 and a stage-3 shape.
CONV_SHAPES = (dict(batch=32, size=56, channels=64, kernel=3, filters=64),
               dict(batch=32, size=28, channels=256, kernel=3, filters=256))
WARMUP_RUNS = 1
TIMED_RUNS = 4
CACHE_FILE = 'peak_gflops.json'
# Other processes' share of the CPU above which a measurement is contended.
CONTENDED_SHARE = 0.10
RETRY_CONTENDED_SEC = 600


def cache_path():
  root = os.environ.get('XDG_CACHE_HOME') or os.path.join(
      os.path.expanduser('~'), '.cache')
  return os.path.join(root, 'tf_cnn_benchmarks', CACHE_FILE)


def usable_cpus():
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:
    return os.cpu_count() or 1


def cache_key(dtype):
  onednn = os.environ.get('TF_ENABLE_ONEDNN_OPTS', 'default')
  return '|'.join([
      'tf=' + tf.__version__, 'cpu=' + environment.cpu_model(),
      'cpus=%d' % usable_cpus(), 'onednn=' + onednn,
      'dtype=' + tf.as_dtype(dtype).name])


def _time_best(sess, op):
  for _ in range(WARMUP_RUNS):
    sess.run(op)
  best = float('inf')
  for _ in range(TIMED_RUNS):
    start = time.perf_counter()
    sess.run(op)
    best = min(best, time.perf_counter() - start)
  return best


def _operands(shapes, dtype, tag):
  """Random operands held in variables, so grappler cannot fold the op."""
  # Cast in the initialiser: the timed op must not include a cast.
  return [tf1.Variable(tf.cast(tf.random.uniform(shape, -1.0, 1.0, seed=i),
                               dtype), trainable=False,
                       name='%s_operand%d' % (tag, i))
          for i, shape in enumerate(shapes)]


def _benchmarks(dtype):
  """[(name, op, flops)] of the micro-benchmarks, built in the default graph."""
  n, k, m = MATMUL_SHAPE
  a, b = _operands([[n, k], [k, m]], dtype, 'matmul')
  out = [('matmul_%dx%dx%d' % (n, k, m), tf.matmul(a, b).op, 2.0 * n * k * m)]
  for c in CONV_SHAPES:
    name = 'conv2d_%dx%dx%dx%d_k%d_f%d' % (
        c['batch'], c['size'], c['size'], c['channels'], c['kernel'],
        c['filters'])
    x, w = _operands([[c['batch'], c['size'], c['size'], c['channels']],
                      [c['kernel'], c['kernel'], c['channels'],
                       c['filters']]], dtype, name)
    flops = 2.0 * (c['batch'] * c['size'] * c['size'] * c['filters'] *
                   c['kernel'] * c['kernel'] * c['channels'])
    out.append((name, tf.nn.conv2d(x, w, strides=1, padding='SAME').op,
                flops))
  return out


def measure(dtype=tf.float32):
  """Runs the micro-benchmarks; returns the cache entry (a dict)."""
  dtype = tf.as_dtype(dtype)
  graph = tf.Graph()
  with graph.as_default():
    benchmarks = _benchmarks(dtype)
    init = tf1.global_variables_initializer()
  started = time.perf_counter()
  rates = {}
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    with cpu_share.OtherProcessesMeter() as contention:
      for name, op, flops in benchmarks:
        rates[name] = flops / _time_best(sess, op) / 1e9
  matmul = max(v for k, v in rates.items() if k.startswith('matmul'))
  conv = max(v for k, v in rates.items() if k.startswith('conv2d'))
  return {
      'gflops': max(matmul, conv),
      'matmul_gflops': matmul,
      'conv2d_gflops': conv,
      'benchmarks_gflops': rates,
      'dtype': dtype.name,
      'measured_in_sec': time.perf_counter() - started,
      'other_processes_cpu_share': contention.share,
      'measured_at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
      'measured_at_unix': time.time(),
      'hostname': platform.node(),
  }


def contended(entry):
  """Was the entry measured while others used the CPU? Entries that lack
  the field (written before it existed) count as contended."""
  if 'other_processes_cpu_share' not in entry:
    return True
  share = entry['other_processes_cpu_share']
  return share is not None and share > CONTENDED_SHARE


def _read_cache(path):
  try:
    with open(path) as f:
      data = json.load(f)
    return data if isinstance(data, dict) else {}
  except (OSError, ValueError):
    return {}


def cached(dtype):
  """The cached entry for this host/TF/dtype, or None."""
  entry = _read_cache(cache_path()).get(cache_key(dtype))
  return entry if isinstance(entry, dict) and entry.get('gflops') else None


def store(dtype, entry):
  """Adds ``entry`` to the cache (atomically; a lost race loses one entry).

  A cache that cannot be written (a read-only home) is no error: it only
  costs a re-measurement next time.
  """
  path = cache_path()
  data = _read_cache(path)
  data[cache_key(dtype)] = entry
  try:
    atomic_files.write_text_atomically(
        path, json.dumps(data, indent=1, sort_keys=True))
  except OSError:
    pass


def _worth_retrying(entry):
  age = time.time() - entry.get('measured_at_unix', 0)
  return contended(entry) and age > RETRY_CONTENDED_SEC


def peak_gflops(dtype=tf.float32, remeasure=False, measure_if_missing=True):
  """(GFLOP/s, source), source 'cached' or 'measured'; (None, None) when
  nothing is cached and measuring is not allowed.

  ``remeasure`` replaces the cached value; an automatic re-measurement of a
  contended entry keeps the better of the two.
  """
  entry = None if remeasure else cached(dtype)
  if entry is not None and not (measure_if_missing and
                                _worth_retrying(entry)):
    return entry['gflops'], 'cached'
  if entry is None and not (measure_if_missing or remeasure):
    return None, None
  fresh = measure(dtype)
  if entry is not None and entry['gflops'] > fresh['gflops']:
    # Noise only lowers a peak: keep the better value; the retry's
    # contention decides whether to try again.
    fresh = dict(entry, measured_at_unix=time.time(),
                 retried_at=fresh['measured_at'],
                 other_processes_cpu_share=fresh['other_processes_cpu_share'])
  store(dtype, fresh)
  return fresh['gflops'], 'measured'


def main():
  """Measures (and caches) the peak of each dtype; prints one JSON line each.

    python -m tf_cnn_benchmarks.measure.peak [float32 bfloat16 ...]
  """
  import sys  # pylint: disable=g-import-not-at-top
  for name in sys.argv[1:] or ['float32', 'bfloat16']:
    entry = measure(name)
    store(name, entry)
    print(json.dumps(entry, sort_keys=True), flush=True)


if __name__ == '__main__':
  main()
