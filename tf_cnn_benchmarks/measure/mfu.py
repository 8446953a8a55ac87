"""Model FLOP utilisation (MFU): the run's useful FLOP/s over this machine's
peak, for the report line and the run record.

FLOPs per image come from the step's graph (flops.py), the peak from the
micro-benchmarks (peak.py) of the run's compute dtype, so a bfloat16 run is
judged against the bfloat16 peak. The rate is this process's own images/sec
(a cluster worker's share, against its host's peak).
"""

import dataclasses
from typing import Optional

from tf_cnn_benchmarks.measure import flops
from tf_cnn_benchmarks.measure import peak

PREFIX = 'model FLOP utilisation: '


@dataclasses.dataclass
class Utilisation:
  gflops_per_image: float
  model_gflops_per_sec: float
  peak_gflops_per_sec: Optional[float]
  peak_source: Optional[str]  # 'flag', 'cached', 'measured' or None
  dtype: str

  @property
  def mfu(self):
    if not self.peak_gflops_per_sec:
      return None
    return self.model_gflops_per_sec / self.peak_gflops_per_sec

  def line(self):
    """The report line (after the ``total images/sec`` block)."""
    if self.mfu is None:
      return PREFIX + 'n/a (%.1f GFLOP/s, %.2f GFLOP per image; peak not ' \
          'known: pass --peak_gflops or --measure_peak)' % (
              self.model_gflops_per_sec, self.gflops_per_image)
    return PREFIX + '%.1f%% (%.1f of %.1f GFLOP/s %s peak, %.2f GFLOP per ' \
        'image)' % (100 * self.mfu, self.model_gflops_per_sec,
                    self.peak_gflops_per_sec, self.dtype,
                    self.gflops_per_image)


def gflops_per_image(fetches, images_per_step):
  """GFLOP per image of one session.run of ``fetches``."""
  return flops.count(fetches).per_image(images_per_step) / 1e9


def resolve_peak(params, dtype, may_measure=True):
  """(GFLOP/s or None, source). --peak_gflops wins; else the cache; else a
  measurement (only when ``may_measure``: cluster tasks sharing a host must
  not measure at once, each would see a fraction of the machine)."""
  if params.peak_gflops:
    return params.peak_gflops, 'flag'
  value, source = peak.peak_gflops(dtype, remeasure=params.measure_peak,
                                   measure_if_missing=may_measure)
  return value, source


def compute(params, dtype, per_image_gflops, images_per_sec,
            may_measure=True):
  """Utilisation of a run; never raises (a failed peak gives mfu None)."""
  try:
    peak_value, source = resolve_peak(params, dtype, may_measure)
  except Exception:  # pylint: disable=broad-except
    peak_value, source = None, None
  return Utilisation(
      gflops_per_image=per_image_gflops,
      model_gflops_per_sec=per_image_gflops * images_per_sec,
      peak_gflops_per_sec=peak_value, peak_source=source,
      dtype=dtype.name)
