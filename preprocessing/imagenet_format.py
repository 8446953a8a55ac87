"""The ImageNet TFRecord format: shard names and tf.train.Example keys.

One place for both sides (the builder writes it, the reader parses it), so
they cannot drift apart. Shards are named `<subset>-NNNNN-of-MMMMM`.
"""

import tensorflow as tf

SUBSETS = ('train', 'validation')

# The full ImageNet-1k (ILSVRC 2012) dataset, as the original tool counts it.
FULL_IMAGENET_EXAMPLES = {'train': 1281167, 'validation': 50000}
FULL_IMAGENET_SHARDS = {'train': 1024, 'validation': 128}

ENCODED = 'image/encoded'
FORMAT = 'image/format'
FILENAME = 'image/filename'
HEIGHT = 'image/height'
WIDTH = 'image/width'
LABEL = 'image/class/label'
SYNSET = 'image/class/synset'
TEXT = 'image/class/text'
BBOX_XMIN = 'image/object/bbox/xmin'
BBOX_YMIN = 'image/object/bbox/ymin'
BBOX_XMAX = 'image/object/bbox/xmax'
BBOX_YMAX = 'image/object/bbox/ymax'
BBOX_KEYS = (BBOX_XMIN, BBOX_YMIN, BBOX_XMAX, BBOX_YMAX)


def shard_name(subset, index, num_shards):
  return '%s-%05d-of-%05d' % (subset, index, num_shards)


def shard_glob(subset):
  return '%s-*-of-*' % subset


def _bytes(values):
  return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def _ints(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _floats(values):
  return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def make_example(encoded, label, height, width, filename='', synset='',
                 text='', boxes=((0.0, 0.0, 1.0, 1.0),), image_format='JPEG'):
  """A tf.train.Example in the ImageNet format.

  boxes: (xmin, ymin, xmax, ymax) tuples in [0, 1]; the default is the whole
  image, which is what the reader assumes when nothing better is known.
  """
  def text_bytes(s):
    return s if isinstance(s, bytes) else s.encode('utf-8')

  boxes = list(boxes)
  feature = {
      ENCODED: _bytes([encoded]),
      FORMAT: _bytes([text_bytes(image_format)]),
      FILENAME: _bytes([text_bytes(filename)]),
      HEIGHT: _ints([int(height)]),
      WIDTH: _ints([int(width)]),
      LABEL: _ints([int(label)]),
      SYNSET: _bytes([text_bytes(synset)]),
      TEXT: _bytes([text_bytes(text)]),
  }
  for i, key in enumerate(BBOX_KEYS):
    feature[key] = _floats([float(b[i]) for b in boxes])
  return tf.train.Example(features=tf.train.Features(feature=feature))


def parse_spec():
  """Feature spec for tf.io.parse_single_example.

  Every fixed-length key has a default, so a record missing one still
  parses; the label default (-1) is then caught by the label range check
  and the empty image by the JPEG signature check, each with a clear error.
  """
  spec = {
      ENCODED: tf.io.FixedLenFeature([], tf.string, default_value=''),
      FORMAT: tf.io.FixedLenFeature([], tf.string, default_value='JPEG'),
      FILENAME: tf.io.FixedLenFeature([], tf.string, default_value=''),
      HEIGHT: tf.io.FixedLenFeature([], tf.int64, default_value=0),
      WIDTH: tf.io.FixedLenFeature([], tf.int64, default_value=0),
      LABEL: tf.io.FixedLenFeature([], tf.int64, default_value=-1),
      SYNSET: tf.io.FixedLenFeature([], tf.string, default_value=''),
      TEXT: tf.io.FixedLenFeature([], tf.string, default_value=''),
  }
  for key in BBOX_KEYS:
    spec[key] = tf.io.VarLenFeature(tf.float32)
  return spec
