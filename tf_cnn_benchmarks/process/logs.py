"""Quiet by default: TensorFlow's own logging reaches the user only on request.

Must run before TensorFlow is imported: the C++ log level is read from the
environment when the library loads.
"""

import logging
import os
import warnings

from tf_cnn_benchmarks.process import keras_skip

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


MISSING_TENSORFLOW = (
    'Error: no TensorFlow can be imported by this Python (%s). The harness '
    'does not pick a TensorFlow for you, so it installs beside the one you '
    'have. Install one: pip install -e ".[cpu]" (tensorflow-cpu), '
    'pip install -e ".[gpu]" (tensorflow[and-cuda]), or your vendor\'s '
    'build; `make` picks cpu or gpu by itself.\n')


def load_tensorflow(verbosity):
  """Sets TensorFlow's logging up and imports it; False (having said how to
  install one) when this Python has no TensorFlow."""
  configure_before_tensorflow(verbosity)
  try:
    import_tensorflow_quietly(verbosity)
  except ModuleNotFoundError as e:
    if e.name != 'tensorflow':
      raise
    import sys  # pylint: disable=g-import-not-at-top
    sys.stderr.write(MISSING_TENSORFLOW % sys.executable)
    return False
  return True


def import_tensorflow_quietly(verbosity):
  """Imports TensorFlow with its load-time C++ chatter hidden.

  Some lines (oneDNN notice, CPU feature guard, "All log messages before
  absl::InitializeLog()") are printed by absl's C++ logging before
  TF_CPP_MIN_LOG_LEVEL is consulted, so the level alone cannot hide them.
  At verbosity < 2 the process's stderr is pointed at a temporary file for
  the import; if the import fails, what was captured is shown.
  """
  if verbosity >= 2:
    with keras_skip.skipping_keras_eager_load():
      import tensorflow  # pylint: disable=g-import-not-at-top,unused-import
    return
  import sys  # pylint: disable=g-import-not-at-top
  import tempfile  # pylint: disable=g-import-not-at-top
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile(mode='w+b') as captured:
    os.dup2(captured.fileno(), 2)
    try:
      with keras_skip.skipping_keras_eager_load():
        import tensorflow  # pylint: disable=g-import-not-at-top,unused-import,redefined-outer-name
    except BaseException:
      os.dup2(saved, 2)
      captured.seek(0)
      sys.stderr.write(captured.read().decode(errors='replace'))
      raise
    finally:
      os.dup2(saved, 2)
      os.close(saved)
