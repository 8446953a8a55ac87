"""Run a model, or a part of one, in NHWC and in NCHW on the same weights.

A layout bug (a pool window, concat axis or flatten order read in the wrong
layout) often still gives the right output shape and a finite loss; only the
values show it. So the zoo's tests build a graph in each layout, give the
NCHW graph the NHWC graph's initial weights (matched by variable name), and
compare what the two compute.
"""

import numpy as np
import tensorflow as tf

from tests.models import inspect_model

tf1 = tf.compat.v1


def sessions_on_same_weights(build):
  """Yields (data_format, built, session) for NHWC, then for NCHW.

  ``build(data_format)`` makes a new graph and returns a tuple whose first
  item is that graph (the rest is whatever the caller wants back, as
  ``built``). The NHWC session's variables are initialised as usual; the
  NCHW session's take the NHWC values, so the two compute the same function
  when the layout is threaded through every layer.
  """
  weights = None
  for data_format in ('NHWC', 'NCHW'):
    built = build(data_format)
    graph = built[0]
    with graph.as_default(), tf1.Session(graph=graph) as sess:
      variables = tf1.global_variables()
      if weights is None:
        sess.run(tf1.global_variables_initializer())
        weights = {v.name: value
                   for v, value in zip(variables, sess.run(variables))}
      else:
        assert sorted(weights) == sorted(v.name for v in variables)
        # One run: every initial value is fed the NHWC graph's weights.
        sess.run(tf1.global_variables_initializer(),
                 {v.initial_value: weights[v.name] for v in variables})
      yield data_format, built, sess


def assert_close_logits(logits, rtol=1e-4):
  """``logits['NCHW']`` equals ``logits['NHWC']`` to ``rtol``; logits near
  zero are held to ``rtol`` of the largest one instead (summation order
  differs between the layouts' kernels)."""
  scale = np.abs(logits['NHWC']).max()
  np.testing.assert_allclose(logits['NCHW'], logits['NHWC'],
                             rtol=rtol, atol=rtol * scale)


def assert_same_logits_in_both_layouts(spec, batch_size=2, rtol=1e-4,
                                       image_size=None):
  """The whole inference graph of ``spec`` gives the same logits in NHWC
  and NCHW on the same weights and images. ``image_size`` overrides the
  spec's (a network that ends in a global pool runs at a smaller input)."""
  image_size = image_size or spec.image_size
  images_value = np.random.RandomState(0).uniform(
      -1, 1, [batch_size, image_size, image_size, 3]).astype(np.float32)

  def build(data_format):
    return inspect_model.build_single_tower(
        spec, batch_size=batch_size, data_format=data_format,
        is_training=False, image_size=image_size)

  logits = {}
  for data_format, (_, images, out), sess in sessions_on_same_weights(build):
    logits[data_format] = sess.run(out.logits, {images: images_value})
  assert_close_logits(logits, rtol)
