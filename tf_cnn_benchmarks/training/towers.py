"""A tower's forward pass and its loss: the same math for both engines.

The graph engine builds one per device (engine_graph/model_graph.py); the tf2
engine calls them inside its tf.function (engine_tf2/train_step.py). Logits
come back in float32 whatever the compute dtype, so the loss is float32.
"""

import tensorflow as tf

from models import layers


def forward(rc, images, training):
  """(logits, aux logits and weight or None) of the model on ``images``
  (or on its ids, for a model that reads ids)."""
  builder = layers.Builder(data_format=rc.data_format, is_training=training,
                           compute_dtype=rc.compute_dtype,
                           variable_dtype=rc.variable_dtype)
  if rc.model.reads_ids:
    # Integer ids (ncf): no layout or dtype; the model embeds them.
    x = images
  else:
    x = builder.to_layout(tf.cast(images, rc.compute_dtype))
  out = rc.model.build(builder, x, rc.model.num_classes)
  aux = None
  if training and out.aux_logits is not None:
    aux = (tf.cast(out.aux_logits, tf.float32), out.aux_loss_weight)
  return tf.cast(out.logits, tf.float32), aux


def tower_loss(logits, aux, labels, num_classes):
  del num_classes
  loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=logits))
  if aux is not None:
    aux_logits, weight = aux
    loss += weight * tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=aux_logits))
  return loss


def correct_in_top_k(logits, labels, k):
  return tf.reduce_sum(tf.cast(tf.nn.in_top_k(
      predictions=logits, targets=labels, k=k), tf.int32))


def densify(grads):
  """--sparse_to_dense_grads: IndexedSlices (sparse gradients, e.g. of a
  gather) as dense tensors; dense gradients pass unchanged."""
  return [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
          for g in grads]
