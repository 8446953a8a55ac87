"""Quiet by default: TensorFlow's own logging reaches the user only on request.

Must run before TensorFlow is imported: the C++ log level is read from the
environment when the library loads.
"""

import logging
import os
import warnings

# --verbosity -> TF_CPP_MIN_LOG_LEVEL (0 all, 1 no INFO, 2 no WARNING).
_CPP_LEVEL = {0: '2', 1: '1', 2: '0'}


def configure_before_tensorflow(verbosity):
  os.environ['TF_CPP_MIN_LOG_LEVEL'] = _CPP_LEVEL[min(verbosity, 2)]
  if verbosity == 0:
    warnings.filterwarnings('ignore', category=DeprecationWarning)
    warnings.filterwarnings('ignore', category=FutureWarning)
    warnings.filterwarnings('ignore', category=UserWarning,
                            module='tensorflow')


def configure_after_tensorflow(verbosity):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  level = {0: logging.ERROR, 1: logging.WARNING}.get(verbosity, logging.INFO)
  tf.get_logger().setLevel(level)
  try:
    from absl import logging as absl_logging  # pylint: disable=g-import-not-at-top
    absl_logging.set_verbosity({0: 'error', 1: 'warning'}.get(verbosity,
                                                             'info'))
  except ImportError:
    pass
