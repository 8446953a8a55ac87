"""Where a run was measured: enough to group results by (TF version, CPU...)."""

import os
import platform
import socket
import sys

import numpy as np
import tensorflow as tf

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


def cpu_flags():
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('flags'):
          return set(line.split(':', 1)[1].split())
  except OSError:
    pass
  return set()


def accelerator():
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


def describe():
  build = tf_build()
  return {
      'tf_version': tf.__version__,
      'tf_git_version': tf.version.GIT_VERSION,
      'tf_distribution': versions.tf_distribution(),
      'tf_gpu_build': build['gpu_build'],
      'tf_onednn': build['onednn'],
      'python_version': platform.python_version(),
      'numpy_version': np.__version__,
      'harness_version': versions.harness_version(),
      'cpu_model': cpu_model(),
      'cpu_count': os.cpu_count(),
      'accelerator': accelerator(),
      'hostname': socket.gethostname(),
      'platform': platform.platform(),
      'executable': sys.executable,
  }
