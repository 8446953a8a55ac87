"""How much memory a run took: this process's peak resident set on the host,
and each GPU's peak as TensorFlow's allocator counts it.

The host figure is the kernel's (getrusage's ru_maxrss: the most of this
process ever resident in RAM), so it counts everything, TensorFlow's CPU
allocations, the input pipeline's buffers and Python alike. A GPU's is
TensorFlow's (tf.config.experimental.get_memory_info's "peak": the most its
allocator handed out at once on that device), which is what runs out when a
batch is too large. Each process of a cluster measures itself; every task's
record has its own.
"""

import dataclasses
import resource
import sys
from typing import Dict

from tf_cnn_benchmarks.failures import byte_size as size

MIB = float(1 << 20)


@dataclasses.dataclass(frozen=True)
class Memory:
  peak_rss_bytes: int
  # {'GPU:0': peak bytes} of every GPU TensorFlow has; empty without one.
  device_peak_bytes: Dict[str, int]

  def record_fields(self):
    """The run record's summary fields (MiB)."""
    return {
        'peak_rss_mb': round(self.peak_rss_bytes / MIB, 1),
        'peak_device_memory_mb': {
            device: round(peak / MIB, 1)
            for device, peak in sorted(self.device_peak_bytes.items())
        } or None,
    }

  def line(self):
    """The report's closing line."""
    parts = ['%s host (peak RSS)' % size(self.peak_rss_bytes)]
    parts += ['%s on %s (TensorFlow\'s peak)' % (size(peak), device)
              for device, peak in sorted(self.device_peak_bytes.items())]
    return 'Peak memory: ' + ', '.join(parts)


def peak_rss_bytes():
  """This process's peak resident set so far."""
  peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  # Linux counts kibibytes, macOS bytes.
  return peak if sys.platform == 'darwin' else peak * 1024


def gpu_peaks():
  """{'GPU:0': peak bytes} of every GPU TensorFlow has made a device of."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.config.list_physical_devices('GPU'):
    return {}  # nothing to ask, and no runtime started just to say so
  peaks = {}
  for device in tf.config.list_logical_devices('GPU'):
    name = device.name.split('device:')[-1]
    try:
      peaks[name] = int(tf.config.experimental.get_memory_info(name)['peak'])
    except (ValueError, RuntimeError):
      pass  # a device whose allocator keeps no statistics
  return peaks


def measure():
  return Memory(peak_rss_bytes(), gpu_peaks())


def peak_on(device):
  """The peak so far on ``device`` ('GPU:0', 'CPU:0', ...): a GPU's from
  TensorFlow, the host's RSS for a CPU; None if unknown."""
  if device.upper().startswith('GPU'):
    return gpu_peaks().get(device.upper())
  return peak_rss_bytes()
