"""OpenMP settings (--kmp_*) for TensorFlow builds that use Intel's OpenMP.

The OpenMP runtime reads KMP_* once, when the library loads, so these must
be in the environment before TensorFlow is imported (benchmark_main does it
right after parsing flags). Standard TensorFlow wheels use their own thread
pools and ignore the variables; only OpenMP (Intel MKL) builds read them.

No TensorFlow here.
"""

import os

from tf_cnn_benchmarks.config.flag_specs import SPECS_BY_NAME

# flag -> environment variable it sets.
VARIABLES = {'kmp_blocktime': 'KMP_BLOCKTIME',
             'kmp_affinity': 'KMP_AFFINITY',
             'kmp_settings': 'KMP_SETTINGS'}


def apply(params, environ=None):
  """Sets each KMP_* variable from its flag; returns {variable: value} set.

  A flag left at its default does not override a value the user already
  exported (the original overrode it with a warning; a value someone
  exported on purpose is the likelier intent).
  """
  environ = os.environ if environ is None else environ
  changed = {}
  for flag, variable in VARIABLES.items():
    value = getattr(params, flag)
    if value == SPECS_BY_NAME[flag].default and variable in environ:
      continue
    environ[variable] = str(value)
    changed[variable] = str(value)
  return changed
