"""Build a zoo model alone (no driver) to count parameters or shapes.

Used by the zoo's tests and by the FLOP counter: a throwaway graph holding a
single tower, so numbers do not depend on the variable manager.
"""

import tensorflow as tf

from models import layers

tf1 = tf.compat.v1


def build_single_tower(spec, batch_size=1, data_format='NHWC',
                       is_training=True, compute_dtype=tf.float32,
                       image_size=None):
  """Returns (graph, images placeholder, ModelOutput) for one tower; for a
  model that reads ids (ncf) the placeholder is its int32 ids instead.
  ``image_size`` overrides the spec's (a network that ends in a global
  pool builds at a smaller input too)."""
  image_size = image_size or spec.image_size
  graph = tf.Graph()
  with graph.as_default():
    b = layers.Builder(data_format=data_format, is_training=is_training,
                       compute_dtype=compute_dtype)
    if spec.reads_ids:
      images = tf1.placeholder(
          tf.int32, [batch_size, len(spec.id_vocab_sizes)], name='ids')
      x = images
    else:
      images = tf1.placeholder(
          tf.float32, [batch_size, image_size, image_size, 3],
          name='images')
      x = b.to_layout(tf.cast(images, compute_dtype))
    with tf1.variable_scope('v0'):
      out = spec.build(b, x, spec.num_classes)
  return graph, images, out


def trainable_parameter_count(spec):
  """Number of trainable scalars in one tower of ``spec``.

  Counted on the training graph, so auxiliary heads (inception) are included.
  """
  graph, _, _ = build_single_tower(spec, is_training=True)
  with graph.as_default():
    return sum(int(v.shape.num_elements())
               for v in tf1.trainable_variables())


def train_steps(spec, steps=2, batch_size=2, data_format='NHWC',
                learning_rate=0.01):
  """Trains ``spec`` standalone for a few SGD steps on random data.

  Returns the list of losses. A zoo smoke check that needs no driver: every
  variable gets a gradient and the losses are finite.
  """
  graph, images, out = build_single_tower(spec, batch_size=batch_size,
                                          data_format=data_format)
  with graph.as_default():
    tf1.set_random_seed(1)
    labels = tf.random.uniform([batch_size], 0, spec.num_classes, tf.int32)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=tf.cast(out.logits, tf.float32)))
    if out.aux_logits is not None:
      loss += out.aux_loss_weight * tf.reduce_mean(
          tf.nn.sparse_softmax_cross_entropy_with_logits(
              labels=labels, logits=tf.cast(out.aux_logits, tf.float32)))
    variables = tf1.trainable_variables()
    grads = tf.gradients(loss, variables)
    missing = [v.name for v, g in zip(variables, grads) if g is None]
    if missing:
      raise AssertionError('variables without a gradient: %s' % missing)
    with tf.control_dependencies(tf1.get_collection(tf1.GraphKeys.UPDATE_OPS)):
      train_op = tf1.train.GradientDescentOptimizer(
          learning_rate).apply_gradients(zip(grads, variables))
    init = tf1.global_variables_initializer()
  import numpy as np
  rng = np.random.RandomState(0)
  feed = rng.uniform(-1, 1, images.shape.as_list()).astype(np.float32)
  losses = []
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    for _ in range(steps):
      value, _ = sess.run([loss, train_op], {images: feed})
      losses.append(float(value))
  return losses
