"""TensorFlow's import without its eager load of Keras: 0.85 s of every
process's start.

`import tensorflow` (2.16 and later) ends by importing
keras.src.optimizers (tf_keras' under TF_USE_LEGACY_KERAS), so that Keras'
optimizers register with the SavedModel registry (TensorFlow's own comment
names b/196254385). That loads all of Keras: 0.85 s of the 2.75 s the
import took here (python -X importtime; TensorFlow 2.21, 28 Nov 2026), in
every task of every cluster and every run. The harness builds its models
from TensorFlow ops and saves no Keras object, and TensorFlow skips that
load by itself when Keras is missing (it catches the ImportError). So the
import is made to see Keras missing for that one call only; `tf.keras` and
`import keras` work as before, loading Keras when first used.
"""

import contextlib
import importlib

# What TensorFlow's __init__ imports eagerly, for Keras 3 and for tf_keras.
EAGER_KERAS_MODULES = ('keras.src.optimizers', 'tf_keras.src.optimizers')


@contextlib.contextmanager
def skipping_keras_eager_load():
  """Within: importlib.import_module of EAGER_KERAS_MODULES raises
  ImportError (TensorFlow's __init__ calls it by that name); any other
  import, and every import after, is untouched."""
  real = importlib.import_module

  def import_module(name, package=None):
    if name in EAGER_KERAS_MODULES:
      raise ImportError('%s: not loaded while TensorFlow loads '
                        '(tf_cnn_benchmarks/process/keras_skip.py)' % name)
    return real(name, package)

  importlib.import_module = import_module
  try:
    yield
  finally:
    importlib.import_module = real
