"""L2 weight decay: the penalty in the loss, and its gradient summed in place.

As in the original, ``rate * sum(l2_loss(w))`` is added to the loss (so the
loss reported includes it) and every decayed weight's gradient is
``g + rate * w``, where g is the gradient of the loss without the penalty.
tf.gradients builds that sum as two ops: a product ``w * rate`` into a
new buffer, then ``AddN(g, product)``; five reads and writes of memory the
size of the weight, where one pass needs three. For trivial, whose 16 MB
logits weight is most of what its step moves, those two took 1.1 ms of the
8.9 ms its ops ran in a traced step; the sum in place takes 0.5 ms
(PERFORMANCE.md, "At d4ee887: the weight decay's sum in place").

``gradients`` computes the same sum in one pass, in place in g's own
buffer: g is handed (not copied) to a scratch resource variable, and the
update kernel ``ResourceApplyGradientDescent(scratch, alpha=-rate,
delta=w)`` turns it into ``g - (-rate) * w``, which is the AddN's
``g + w * rate`` bit for bit. The optimizer, whichever it is, receives the
same gradient as before.
"""

import tensorflow as tf

from models import layers

tf1 = tf.compat.v1

# Name scope of the ops that sum a gradient in place (under the gradient's
# own op, so a step profile still files them as gradients).
SCOPE = 'decay_sum'


def decayed(variable):
  """Whether ``variable`` is decayed: every weight but batch norm's (as in
  the original)."""
  # variable.name, not .op.name: an eager (tf2 engine) variable has no op.
  return layers.BATCHNORM_SCOPE not in variable.name.split('/')


def penalty(variables, rate, single_op=False):
  """The L2 penalty added to the loss: rate * sum of l2_loss(w)."""
  return penalty_and_reads(variables, rate, single_op)[0]


def penalty_and_reads(variables, rate, single_op=False):
  """(penalty, {variable ref: the tensor of it the penalty read}).

  ``single_op`` (--single_l2_loss_op): one l2_loss over every weight
  flattened and concatenated, instead of one op per weight and a sum; the
  value is the same, the graph has fewer (larger) ops. Either way the
  penalty's gradient for w is ``read * rate``, the reads returned here.
  """
  weights = [v for v in variables if decayed(v)]
  if not weights or rate <= 0:
    return tf.constant(0.0), {}
  # The tensor a variable converts to: its caching device's copy when it
  # has one, as every other reader of the step gets.
  reads = {v.ref(): tf.convert_to_tensor(v) for v in weights}
  # Half-precision weights (--fp16_vars) are summed in float32, as the
  # original did: the loss is float32, and float16 sums of squares overflow.
  values = [tf.cast(reads[v.ref()], tf.float32) for v in weights]
  if single_op:
    return rate * tf.nn.l2_loss(tf.concat(
        [tf.reshape(v, [-1]) for v in values], axis=0)), reads
  return rate * tf.math.add_n([tf.nn.l2_loss(v) for v in values]), reads


def gradients(base_loss, variables, reads, rate, loss_scale=None):
  """tf.gradients(base_loss + penalty, variables), each decayed weight's
  dense gradient summed in place (``reads``, ``rate``: penalty_and_reads's
  and the penalty's rate). ``loss_scale`` (training/loss_scale.py): the
  base loss's gradients are computed scaled and unscaled before the
  penalty's part joins them (it needs no scaling: it is the weights times
  the rate, in the weights' own dtype)."""
  if loss_scale is None:
    grads = tf.gradients(base_loss, variables)
  else:
    grads = loss_scale.unscaled(tf.gradients(loss_scale.scaled(base_loss),
                                             variables))
  return [_with_decay(g, reads.get(v.ref()), rate)
          for g, v in zip(grads, variables)]


def _with_decay(grad, read, rate):
  if read is None:
    return grad
  # The penalty's own gradient, as tf.gradients makes it.
  if grad is None:
    return read * rate
  if isinstance(grad, tf.IndexedSlices):
    # tf.gradients adds a sparse gradient to a dense one as dense tensors.
    return tf.math.add_n([tf.convert_to_tensor(grad), read * rate])
  return _sum_in_place(grad, read, rate)


def _sum_in_place(grad, read, rate):
  """grad + read * rate, written into grad's buffer.

  The scratch variable takes grad's buffer over (AssignVariableOp moves a
  tensor nothing else holds), the update kernel adds to it in place, and
  its read aliases that buffer: no allocation, one pass. It needs no
  initialisation (each step assigns it first) and is in no collection, so
  checkpoints and initialisers never see it. Its resource lives on the
  gradient's device (a worker's, in a cluster) for the server's or
  session's lifetime.
  """
  # Beside the gradient, whatever the enclosing scopes say: a tower's
  # device function puts variable ops with the variables (a cluster's ps),
  # which would send the gradient there and the sum back.
  with tf1.device(None), tf1.colocate_with(grad.op, ignore_existing=True), \
      tf1.device(grad.device), tf1.name_scope(
          '%s/%s/' % (grad.op.name, SCOPE)):
    scope = tf1.get_default_graph().get_name_scope()
    handle = tf.raw_ops.VarHandleOp(dtype=grad.dtype, shape=grad.shape,
                                    shared_name=scope)
    take = tf.raw_ops.AssignVariableOp(resource=handle, value=grad)
    with tf.control_dependencies([take]):
      add = tf.raw_ops.ResourceApplyGradientDescent(
          var=handle, alpha=tf.constant(-rate, grad.dtype), delta=read)
    with tf.control_dependencies([add]):
      return tf.raw_ops.ReadVariableOp(resource=handle, dtype=grad.dtype)
