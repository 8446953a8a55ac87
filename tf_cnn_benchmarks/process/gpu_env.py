"""The GPU runtime's environment variables (config/gpu_settings.py), set
before TensorFlow loads.

TensorFlow's GPU runtime reads TF_GPU_THREAD_MODE and TF_GPU_THREAD_COUNT
when it creates its devices, and its cuDNN code reads the others when a
kernel first runs; the graph engine's session reads TF_SYNC_ON_FINISH when
it is made. Setting them all before TensorFlow is imported (benchmark_main
does it right after parsing flags) is early enough for every one of them,
in both engines.

As with the OpenMP variables (openmp_env.py), a flag left at its default
does not override a value the user exported: the original overwrote it,
but a value someone exported on purpose is the likelier intent. A flag
given on the command line always wins.

No TensorFlow here.
"""

import os

from tf_cnn_benchmarks.config import gpu_settings
from tf_cnn_benchmarks.config.flag_specs import SPECS_BY_NAME


def _flags_of(variable):
  return [flag for flag, names in gpu_settings.FLAG_VARIABLES.items()
          if variable in names]


def apply(params, environ=None):
  """Sets (or removes) each variable; returns {variable: value or None}
  as changed."""
  environ = os.environ if environ is None else environ
  changed = {}
  for variable, value in gpu_settings.environment(params).items():
    at_default = all(getattr(params, flag) == SPECS_BY_NAME[flag].default
                     for flag in _flags_of(variable))
    if at_default and variable in environ:
      continue
    if value is None:
      environ.pop(variable, None)
    else:
      environ[variable] = value
    changed[variable] = value
  return changed
