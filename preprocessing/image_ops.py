"""ImageNet-style image preprocessing on one JPEG, as the original did it.

Train: sample a distorted bounding box, decode only that crop (or decode
then crop), random left-right flip, resize to the model size, optional
colour distortion, scale to [-1, 1]. Eval: decode, resize preserving aspect
ratio so the shorter side is 1.145 x the target, central crop (about an
87.5% central crop for 224).
"""

import math

import tensorflow as tf

RESIZE_METHODS = {
    'bilinear': tf.image.ResizeMethod.BILINEAR,
    'nearest': tf.image.ResizeMethod.NEAREST_NEIGHBOR,
    'bicubic': tf.image.ResizeMethod.BICUBIC,
    'area': tf.image.ResizeMethod.AREA,
}
# 'round_robin' (as in the original) cycles through the four by the image's
# position in the stream read, so each batch mixes them evenly.
RESIZE_METHOD_NAMES = tuple(RESIZE_METHODS) + ('round_robin',)

# Eval resizes the shorter side to this multiple of the crop size.
EVAL_RESIZE_FACTOR = 1.145


def check_resize_method(name):
  if name not in RESIZE_METHOD_NAMES:
    raise ValueError('--resize_method=%r is not one of: %s'
                     % (name, ', '.join(RESIZE_METHOD_NAMES)))


def _resize(image, size, method, position):
  """Resizes to size=(h, w); position picks the round-robin method."""
  if method != 'round_robin':
    return tf.image.resize(image, size, RESIZE_METHODS[method])
  methods = list(RESIZE_METHODS.values())
  branches = [lambda m=m: tf.cast(tf.image.resize(image, size, m), tf.float32)
              for m in methods]
  choice = tf.cast(tf.math.floormod(position, len(methods)), tf.int32)
  return tf.switch_case(choice, branches)


# Resize methods whose output can leave [0, 255] (bicubic's overshoot at
# edges; round_robin uses bicubic for every fourth image). The others
# interpolate within their inputs' range.
OVERSHOOTING_METHODS = ('bicubic', 'round_robin')


def scale_to_unit_range(image, clip=True):
  """[0, 255] -> [-1, 1]; clip: clip to [0, 255] first (needed only after
  an OVERSHOOTING_METHODS resize, and ~1% of real-data trivial's CPU)."""
  image = tf.cast(image, tf.float32)
  if clip:
    image = tf.clip_by_value(image, 0.0, 255.0)
  return image * (2.0 / 255.0) - 1.0


# ImageNet's mean R, G, B over its training images: what the original's
# --ml_perf subtracted instead of scaling to [-1, 1] (MLPerf's resnet
# reference normalised so).
IMAGENET_CHANNEL_MEANS = (123.68, 116.78, 103.94)


def normalise(image, overshooting, mean_centred=False):
  """The pipeline's last step: [0, 255] to [-1, 1], or (--ml_perf) minus
  the channel means, unscaled."""
  if not mean_centred:
    return scale_to_unit_range(image, overshooting)
  image = tf.cast(image, tf.float32)
  if overshooting:
    image = tf.clip_by_value(image, 0.0, 255.0)
  return image - tf.constant(IMAGENET_CHANNEL_MEANS, tf.float32)


def boxes_from_features(xmin, ymin, xmax, ymax):
  """[1, num_boxes, 4] (ymin, xmin, ymax, xmax) clipped to [0, 1]."""
  boxes = tf.stack([ymin, xmin, ymax, xmax], axis=1)
  return tf.expand_dims(tf.clip_by_value(boxes, 0.0, 1.0), 0)


def random_hue_saturation_in_yiq(image, lower_saturation=0.5,
                                 upper_saturation=1.5,
                                 max_delta_hue=0.2 * math.pi):
  """Random hue and saturation of [0, 1] RGB, changed in YIQ space.

  In YIQ, Y is the luma and (I, Q) the chroma plane: a hue shift is a
  rotation of that plane and a saturation change a scaling of it, so the
  luma is left as it was (the HSV ops change it). The original used
  tf.contrib's random_hsv_in_yiq (value factor 1), gone from TensorFlow 2.
  """
  with tf.name_scope('hue_saturation_in_yiq'):
    angle = tf.random.uniform([], -max_delta_hue, max_delta_hue)
    scale = tf.random.uniform([], lower_saturation, upper_saturation)
    y, i, q = tf.unstack(tf.image.rgb_to_yiq(image), axis=-1)
    cos, sin = scale * tf.cos(angle), scale * tf.sin(angle)
    return tf.image.yiq_to_rgb(
        tf.stack([y, cos * i - sin * q, sin * i + cos * q], axis=-1))


def distort_color(image, in_yiq=False):
  """Random brightness/saturation/hue/contrast on [0, 1] RGB, two orders.

  in_yiq: hue and saturation in YIQ space (--distort_color_in_yiq), else
  with the RGB/HSV ops.
  """
  def hue_saturation(x):
    if in_yiq:
      return random_hue_saturation_in_yiq(x)
    x = tf.image.random_saturation(x, lower=0.5, upper=1.5)
    return tf.image.random_hue(x, max_delta=0.2)

  def order_a():
    x = tf.image.random_brightness(image, max_delta=32.0 / 255.0)
    x = hue_saturation(x)
    return tf.image.random_contrast(x, lower=0.5, upper=1.5)

  def order_b():
    x = tf.image.random_brightness(image, max_delta=32.0 / 255.0)
    x = tf.image.random_contrast(x, lower=0.5, upper=1.5)
    return hue_saturation(x)

  image = tf.cond(tf.random.uniform([]) < 0.5, order_a, order_b)
  return tf.clip_by_value(image, 0.0, 1.0)


def train_image(encoded, boxes, size, resize_method='bilinear',
                distortions=False, fuse_decode_and_crop=True, position=0,
                distort_color_in_yiq=False, ml_perf=False):
  """One JPEG -> float32 [h, w, 3] in [-1, 1] with training distortions.

  ``ml_perf`` (the original's --ml_perf): the crop ignores ``boxes`` (any
  part of the image, as MLPerf's reference crops), and the image is centred
  on the channel means instead of scaled.
  """
  shape = tf.image.extract_jpeg_shape(encoded)
  if ml_perf:
    boxes = tf.zeros([1, 0, 4], tf.float32)
  begin, crop_size, _ = tf.image.sample_distorted_bounding_box(
      shape, bounding_boxes=boxes, min_object_covered=0.1,
      aspect_ratio_range=[0.75, 1.33], area_range=[0.05, 1.0],
      max_attempts=100, use_image_if_no_bounding_boxes=True)
  if fuse_decode_and_crop:
    # Decoding only the crop saves most of the decode work on big images.
    window = tf.stack([begin[0], begin[1], crop_size[0], crop_size[1]])
    image = tf.image.decode_and_crop_jpeg(encoded, window, channels=3,
                                          dct_method='INTEGER_FAST')
  else:
    image = tf.image.decode_jpeg(encoded, channels=3,
                                 dct_method='INTEGER_FAST')
    image = tf.slice(image, begin, crop_size)
  image = tf.image.random_flip_left_right(image)
  image = _resize(image, size, resize_method, position)
  image = tf.cast(image, tf.float32)
  image.set_shape([size[0], size[1], 3])
  if distortions:
    image = distort_color(tf.clip_by_value(image, 0.0, 255.0) / 255.0,
                          in_yiq=distort_color_in_yiq) * 255.0
  return normalise(image, resize_method in OVERSHOOTING_METHODS, ml_perf)


def eval_image(encoded, size, resize_method='bilinear', position=0,
               ml_perf=False):
  """One JPEG -> float32 [h, w, 3] in [-1, 1] (``ml_perf``: minus the
  channel means), deterministic central crop."""
  image = tf.image.decode_jpeg(encoded, channels=3, dct_method='INTEGER_FAST')
  height, width = size
  shape = tf.cast(tf.shape(image)[:2], tf.float32)
  # Scale so both sides cover EVAL_RESIZE_FACTOR x the target (for a square
  # target: the shorter side becomes 1.145 x the target).
  scale = EVAL_RESIZE_FACTOR * tf.maximum(height / shape[0], width / shape[1])
  new_h = tf.maximum(tf.cast(tf.math.ceil(shape[0] * scale), tf.int32), height)
  new_w = tf.maximum(tf.cast(tf.math.ceil(shape[1] * scale), tf.int32), width)
  image = _resize(image, tf.stack([new_h, new_w]), resize_method, position)
  top = (new_h - height) // 2
  left = (new_w - width) // 2
  image = tf.slice(image, tf.stack([top, left, 0]), [height, width, 3])
  image.set_shape([height, width, 3])
  return normalise(image, resize_method in OVERSHOOTING_METHODS, ml_perf)
