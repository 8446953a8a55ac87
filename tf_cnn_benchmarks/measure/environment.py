"""Where a run was measured: enough to group results by (TF version, CPU...).

TensorFlow is imported by the functions that ask it, not here: a run
stopped while TensorFlow is still being imported is described without it
(``describe(with_tensorflow=False)``, liveness/early_signals.py).
"""

import os
import platform
import socket
import sys

from tf_cnn_benchmarks.measure import versions


def cpu_model():
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          return line.split(':', 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or platform.machine()


def accelerator():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  gpus = tf.config.list_physical_devices('GPU')
  if not gpus:
    return None
  names = []
  for gpu in gpus:
    details = tf.config.experimental.get_device_details(gpu)
    names.append(details.get('device_name', gpu.name))
  return ', '.join(names)


def tf_build():
  """What this TensorFlow was built with and runs with: CUDA or ROCm, and
  whether oneDNN is on (it follows TF_ENABLE_ONEDNN_OPTS and the CPU)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  info = tf.sysconfig.get_build_info()
  gpu = ('CUDA' if info.get('is_cuda_build') else
         'ROCm' if info.get('is_rocm_build') else None)
  try:
    # Private, but the only place that knows whether oneDNN is on now; a
    # TensorFlow that moved it must not stop every run.
    from tensorflow.python.util import _pywrap_util_port  # pylint: disable=g-direct-tensorflow-import,g-import-not-at-top
    onednn = bool(_pywrap_util_port.IsMklEnabled())
  except (ImportError, AttributeError):
    onednn = None
  return {'gpu_build': gpu, 'onednn': onednn}


def tf_build_line():
  """'tensorflow-cpu, CPU only, oneDNN on': the run header's TF build."""
  build = tf_build()
  return '%s, %s, oneDNN %s' % (
      versions.tf_distribution() or 'unknown distribution',
      '%s build' % build['gpu_build'] if build['gpu_build'] else 'CPU only',
      {True: 'on', False: 'off', None: 'unknown'}[build['onednn']])


def describe(with_tensorflow=True):
  """The record's ``environment``. Without TensorFlow (it may be
  half-imported by another thread): the versions pip knows, and null for
  what only a loaded TensorFlow can tell."""
  if with_tensorflow:
    import numpy as np  # pylint: disable=g-import-not-at-top
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    build = tf_build()
    loaded = {'tf_version': tf.__version__,
              'tf_git_version': tf.version.GIT_VERSION,
              'numpy_version': np.__version__,
              'accelerator': accelerator()}
  else:
    build = {'gpu_build': None, 'onednn': None}
    loaded = {'tf_version': versions.tf_installed_version(),
              'tf_git_version': None,
              'numpy_version': versions.installed_version('numpy'),
              'accelerator': None}
  commit, commit_time = versions.git_commit()
  return {
      'tf_version': loaded['tf_version'],
      'tf_git_version': loaded['tf_git_version'],
      'tf_distribution': versions.tf_distribution(),
      'tf_files_sha256': versions.tf_files_sha256(),
      'tf_gpu_build': build['gpu_build'],
      'tf_onednn': build['onednn'],
      'python_version': platform.python_version(),
      'numpy_version': loaded['numpy_version'],
      'harness_version': versions.harness_version(),
      'harness_commit': commit,
      'harness_commit_time': commit_time,
      'cpu_model': cpu_model(),
      'cpu_count': os.cpu_count(),
      # The CPUs this process may run on (the runner pins them: --cpus).
      'cpu_affinity': sorted(os.sched_getaffinity(0)),
      'accelerator': loaded['accelerator'],
      'hostname': socket.gethostname(),
      'platform': platform.platform(),
      'executable': sys.executable,
  }
