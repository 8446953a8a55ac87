"""Image decode/encode for the dataset builder, in a private graph.

A private graph and session (not eager ops) so the builder works the same
whether or not the calling process has eager execution switched off, and
inside another graph's `as_default()` block.
"""

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1

JPEG_SIGNATURE = b'\xff\xd8\xff'


def is_jpeg(data):
  return data[:3] == JPEG_SIGNATURE


class ImageCodec:
  """decode(bytes) -> uint8 [h, w, 3]; encode_jpeg(pixels) -> bytes."""

  def __init__(self, quality=95):
    self._graph = tf.Graph()
    with self._graph.as_default():
      self._encoded = tf1.placeholder(tf.string, [])
      # Any format TensorFlow reads (JPEG, PNG, GIF first frame, BMP).
      self._decoded = tf.io.decode_image(self._encoded, channels=3,
                                         expand_animations=False)
      self._pixels = tf1.placeholder(tf.uint8, [None, None, 3])
      self._jpeg = tf.io.encode_jpeg(self._pixels, quality=quality)
    config = tf1.ConfigProto(intra_op_parallelism_threads=1,
                             inter_op_parallelism_threads=1)
    self._session = tf1.Session(graph=self._graph, config=config)

  def decode(self, data):
    """Pixels of an encoded image; tf.errors.InvalidArgumentError if bad."""
    return self._session.run(self._decoded, {self._encoded: data})

  def encode_jpeg(self, pixels):
    pixels = np.asarray(pixels, dtype=np.uint8)
    return self._session.run(self._jpeg, {self._pixels: pixels})

  def close(self):
    self._session.close()

  def __enter__(self):
    return self

  def __exit__(self, *unused):
    self.close()
