"""tf.compat.v1.get_variable's home in TensorFlow 2, without forking a model.

The builder (models/layers.py) asks for its variables with
``tf.compat.v1.get_variable`` every time it runs, and in a tf.function it
runs at every trace (and, under MirroredStrategy, once per replica). A
variable-creator hook of our own gives it one variable per name for the
whole run:

* while the store is ``creating`` (one trace of the model, never run), each
  new name becomes a real variable, made outside the function
  (``tf.init_scope``) under the run's strategy (so a MirroredVariable on
  every device), with its initial value computed eagerly at once;
* afterwards the same names return those variables, and a name never seen
  is an error (a model that made different variables on a second call
  would otherwise train variables nobody initialised the same way).

Names are the graph engine's tower-0 names (scope ``v0``) and the initial
values come through the graph engine's own seeded getter
(variable_update/base.seeded_initializer_getter), so both engines start
from the same weights. Statistics updated in the step (batch norm's moving
averages, the builder's ``assign_sub``) are kept from the first replica
(aggregation ONLY_FIRST_REPLICA): the graph engine updates them from tower
0 only, and a plain mirrored variable written per replica would let the
copies drift apart silently.
"""

import contextlib

import tensorflow as tf
# The table behind tf.compat.v1.get_variable has no public name;
# track_tf1_style_variables swaps it the same way.
from tensorflow.python.ops import variable_scope  # pylint: disable=g-direct-tensorflow-import

from tf_cnn_benchmarks.variable_update import base

tf1 = tf.compat.v1

# The graph engine's tower-0 scope: names (and so seeds) match its copy 0.
TOWER_SCOPE = 'v0'


class UnknownVariable(RuntimeError):
  pass


class VariableStore:

  def __init__(self, seed):
    self._seed = seed
    self._by_name = {}  # name -> variable, in creation order
    self._creating = False
    self._making = False
    # tf.compat.v1's name -> variable table that get_variable consults. A
    # function's graph shares the global graph's collections, where the
    # default table lives: without one of its own, a second run in this
    # process would find the first run's variables.
    self._v1_store = variable_scope._VariableStore()  # pylint: disable=protected-access

  @property
  def variables(self):
    return list(self._by_name.values())

  @property
  def trainable_variables(self):
    """In creation order: the graph engine's tower_variables(0) order, so
    sums over them (weight decay) add up in the same order."""
    return [v for v in self._by_name.values() if v.trainable]

  def _creator(self, next_creator, **kwargs):
    if self._making:
      # Our own tf.Variable below, seen again by this hook: let it through.
      return next_creator(**kwargs)
    name = kwargs['name']
    var = self._by_name.get(name)
    if var is not None:
      return var
    if not self._creating:
      raise UnknownVariable(
          'the model asked for a variable %r it did not create when it was '
          'first built; the tf2 engine needs a model that creates the same '
          'variables every time it runs.' % name)
    var = self._create(kwargs)
    self._by_name[name] = var
    return var

  def _create(self, kwargs):
    """A variable outside the function being traced (tf.init_scope), made
    by the strategy of the run; never a function-local one (variable
    lifting off)."""
    trainable = kwargs.get('trainable') is not False
    aggregation = (tf.VariableAggregation.NONE if trainable
                   else tf.VariableAggregation.ONLY_FIRST_REPLICA)
    self._making = True
    try:
      with tf.init_scope():
        return tf.Variable(
            initial_value=kwargs['initial_value'], trainable=trainable,
            name=kwargs['name'], dtype=kwargs.get('dtype'),
            aggregation=aggregation,
            experimental_enable_variable_lifting=False)
    finally:
      self._making = False

  @contextlib.contextmanager
  def _scope(self, reuse):
    with tf.variable_creator_scope(self._creator), \
        variable_scope.with_variable_store(self._v1_store), \
        tf1.variable_scope(TOWER_SCOPE, reuse=reuse,
        custom_getter=base.seeded_initializer_getter(self._seed)):
      yield

  @contextlib.contextmanager
  def creating(self):
    """Model code run here creates the variables it asks for (a name asked
    for twice is the builder's error, as in the graph engine)."""
    self._creating = True
    try:
      with self._scope(reuse=None):
        yield
    finally:
      self._creating = False

  def reusing(self):
    """Model code run here gets the variables made while creating: every
    trace, and every replica of one (a later replica finds the name in the
    trace's tf.compat.v1 store already, hence AUTO_REUSE)."""
    return self._scope(reuse=tf1.AUTO_REUSE)
