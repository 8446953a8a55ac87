"""A learnable, seeded, offline image dataset: shapes in textures.

There is no ImageNet or CIFAR-10 here, and synthetic noise cannot show that
a model learns. These images carry their class in the pixels and nowhere
else: each class is a shape (some differ only in orientation: a triangle up
or down, a bar lying or standing) filled with a texture (solid, stripes
across or along, checks, dots, a grid, at two scales), and everything else
is drawn at random per image, so a network must learn the shape and the
texture to tell classes apart:

* colour jitter: background and shape colours are random (any hue, any
  saturation); colour says nothing about the class;
* position and size: the shape's centre anywhere that keeps it inside, its
  size 35-70% of the shorter side;
* a smooth random shading of the background, and pixel noise over all.

Orientation classes are chosen to survive the training pipelines' random
left-right flips (up/down and lying/standing do; a diagonal would turn into
its mirror image, another class). Texture periods are proportional to the
shape's size, so a random crop that zooms the image keeps them apart.

Up to 100 classes (10 shapes x 10 textures); class k is shape k % 10 with
texture (k // 10 + k) % 10, so the first 10 classes differ in both, and
every class count from 2 to 100 is a set of distinct pairs. Same seed, same
images, on any machine (numpy's RandomState is stable across releases).

Writers: build_dataset.write_generated_imagenet (TFRecord shards for
--data_dir, labels 1..K, each record's box the shape's box, as ImageNet's
boxes are the object's) and ``write_cifar10`` here (the python-version
batches, 32x32, 10 classes). The command is ``tf_cnn_benchmarks
build-dataset --generate``. This module needs no TensorFlow.
How hard it is, measured: benchmarks/dataset_difficulty.py and README.
"""

import os
import pickle

import numpy as np

SHAPES = ('disc', 'square', 'triangle_up', 'triangle_down', 'cross', 'ring',
          'diamond', 'bar_lying', 'bar_standing', 'tee')
TEXTURES = ('solid', 'stripes_across', 'stripes_along', 'checks', 'dots',
            'grid', 'fine_stripes_across', 'fine_stripes_along',
            'fine_checks', 'fine_dots')
MAX_CLASSES = len(SHAPES) * len(TEXTURES)
# Pixel noise's standard deviation, in units of the 0..255 range.
DEFAULT_NOISE = 0.08


def class_parts(label):
  """(shape, texture) of class ``label`` (0-based)."""
  if not 0 <= label < MAX_CLASSES:
    raise ValueError('class %d is outside 0..%d' % (label, MAX_CLASSES - 1))
  return (SHAPES[label % len(SHAPES)],
          TEXTURES[(label // len(SHAPES) + label) % len(TEXTURES)])


def class_name(label):
  return '%s %s' % class_parts(label)[::-1]


def _shape_mask(shape, u, v):
  """Inside the shape, in coordinates where it spans [-1, 1] (v down)."""
  a, b = np.abs(u), np.abs(v)
  if shape == 'disc':
    return u * u + v * v <= 1.0
  if shape == 'square':
    return np.maximum(a, b) <= 0.8
  if shape in ('triangle_up', 'triangle_down'):
    w = v if shape == 'triangle_up' else -v
    # Apex at w = -1, base at w = 0.8: the width grows down the shape.
    return (w >= -1.0) & (w <= 0.8) & (a <= (w + 1.0) * 0.55)
  if shape == 'cross':
    return ((a <= 0.3) | (b <= 0.3)) & (np.maximum(a, b) <= 1.0)
  if shape == 'ring':
    r2 = u * u + v * v
    return (r2 <= 1.0) & (r2 >= 0.3)
  if shape == 'diamond':
    return a + b <= 1.0
  if shape == 'bar_lying':
    return (a <= 1.0) & (b <= 0.33)
  if shape == 'bar_standing':
    return (a <= 0.33) & (b <= 1.0)
  if shape == 'tee':
    return (((v >= -1.0) & (v <= -0.45) & (a <= 1.0)) |
            ((a <= 0.28) & (v >= -1.0) & (v <= 1.0)))
  raise ValueError('unknown shape %r' % shape)


def _texture_mask(texture, u, v):
  """True where the texture's second colour goes (u, v as for the shape,
  so its period scales with the shape)."""
  fine = texture.startswith('fine_')
  periods = 2.0 / (7.0 if fine else 3.5)
  kind = texture[5:] if fine else texture
  # Phase per image comes in through u, v offsets (the caller's).
  if kind == 'solid':
    return np.zeros(u.shape, bool)
  if kind == 'stripes_across':  # horizontal bands
    return np.floor(v / periods) % 2 == 0
  if kind == 'stripes_along':  # vertical bands
    return np.floor(u / periods) % 2 == 0
  if kind == 'checks':
    return (np.floor(u / periods) + np.floor(v / periods)) % 2 == 0
  if kind == 'dots':
    fu = (u / periods) % 1.0 - 0.5
    fv = (v / periods) % 1.0 - 0.5
    return fu * fu + fv * fv <= 0.09
  if kind == 'grid':
    fu = (u / periods) % 1.0
    fv = (v / periods) % 1.0
    return (fu < 0.3) | (fv < 0.3)
  raise ValueError('unknown texture %r' % texture)


def _random_colour(rng, light):
  """RGB in 0..255 of any hue and saturation, light or dark."""
  hue = rng.uniform(0.0, 1.0)
  saturation = rng.uniform(0.0, 1.0)
  value = rng.uniform(0.75, 1.0) if light else rng.uniform(0.05, 0.35)
  # HSV to RGB, vectorised by hand (colorsys per image is fine too, but
  # this keeps the arithmetic in numpy's float64 like the rest).
  i = int(hue * 6.0) % 6
  f = hue * 6.0 - int(hue * 6.0)
  p, q, t = (value * (1 - saturation), value * (1 - saturation * f),
             value * (1 - saturation * (1 - f)))
  rgb = [(value, t, p), (q, value, p), (p, value, t), (p, q, value),
         (t, p, value), (value, p, q)][i]
  return np.array(rgb) * 255.0


def render(rng, label, height, width, noise=DEFAULT_NOISE):
  """(uint8 [height, width, 3], box) of one image of class ``label``.

  ``box``: (xmin, ymin, xmax, ymax) of the shape, as fractions of the image.
  """
  shape, texture = class_parts(label)
  side = min(height, width)
  radius = rng.uniform(0.175, 0.35) * side
  cy = rng.uniform(radius, height - radius)
  cx = rng.uniform(radius, width - radius)
  yy, xx = np.mgrid[0:height, 0:width].astype(np.float64) + 0.5
  u, v = (xx - cx) / radius, (yy - cy) / radius
  # The shape light on dark or dark on light; its texture's second colour
  # on the same side, so the shape stands out whatever its texture.
  light_shape = rng.uniform() < 0.5
  background = _random_colour(rng, not light_shape)
  first = _random_colour(rng, light_shape)
  second = first * rng.uniform(0.35, 0.6) if light_shape else (
      first + (255.0 - first) * rng.uniform(0.35, 0.6))
  # The background's shading: a random linear ramp of +-15%.
  ramp = 1.0 + 0.15 * (rng.uniform(-1, 1) * (xx / width - 0.5) * 2 +
                       rng.uniform(-1, 1) * (yy / height - 0.5) * 2) / 2
  image = background[None, None, :] * ramp[:, :, None]
  inside = _shape_mask(shape, u, v)
  marked = _texture_mask(texture, u + rng.uniform(0, 2),
                         v + rng.uniform(0, 2)) & inside
  image[inside] = first
  image[marked] = second
  image += rng.normal(0.0, noise * 255.0, image.shape)
  ys, xs = np.nonzero(inside)
  if ys.size == 0:  # a shape smaller than a pixel: the whole image
    box = (0.0, 0.0, 1.0, 1.0)
  else:
    box = (xs.min() / width, ys.min() / height, (xs.max() + 1) / width,
           (ys.max() + 1) / height)
  return np.clip(np.rint(image), 0, 255).astype(np.uint8), box


def labels_for(rng, num_classes, images_per_class):
  """Each class ``images_per_class`` times, in a seeded random order."""
  labels = np.repeat(np.arange(num_classes), images_per_class)
  rng.shuffle(labels)
  return labels


def check_num_classes(num_classes):
  if not 2 <= num_classes <= MAX_CLASSES:
    raise ValueError('num_classes must be in 2..%d, got %d'
                     % (MAX_CLASSES, num_classes))


def subset_labels(subset, num_classes, per_class, seed):
  """(rng, labels) of a subset: the seeded stream its images are drawn
  from, and its labels in order. Independent streams per subset, so adding
  validation images never changes the training images."""
  rng = np.random.RandomState(seed * 2 + (1 if subset == 'train' else 2))
  return rng, labels_for(rng, num_classes, per_class)


CIFAR_TRAIN_BATCHES = 5  # data_batch_1..5, as CIFAR-10's


def write_cifar10(output_dir, train_per_class=500, validation_per_class=100,
                  seed=0, noise=DEFAULT_NOISE):
  """CIFAR-10 python-version batches of generated 32x32 images (10
  classes): data_batch_1..5 and test_batch; returns their paths."""
  os.makedirs(output_dir, exist_ok=True)
  paths = []
  per_batch = 10 * train_per_class // CIFAR_TRAIN_BATCHES
  for subset, per_class in (('train', train_per_class),
                            ('validation', validation_per_class)):
    rng, labels = subset_labels(subset, 10, per_class, seed)
    images = np.stack([render(rng, int(l), 32, 32, noise)[0]
                       for l in labels]) if len(labels) else np.zeros(
                           (0, 32, 32, 3), np.uint8)
    # CIFAR's layout: per image, the R, G and B planes, each row-major.
    data = images.transpose(0, 3, 1, 2).reshape(len(labels), -1)
    if subset == 'train':
      parts = np.array_split(np.arange(len(labels)), CIFAR_TRAIN_BATCHES)
      names = ['data_batch_%d' % (i + 1) for i in range(CIFAR_TRAIN_BATCHES)]
    else:
      parts, names = [np.arange(len(labels))], ['test_batch']
    for name, part in zip(names, parts):
      path = os.path.join(output_dir, name)
      temp = path + '.tmp-%d' % os.getpid()
      with open(temp, 'wb') as f:
        pickle.dump({b'batch_label': name.encode(),
                     b'labels': [int(l) for l in labels[part]],
                     b'data': data[part],
                     b'filenames': [b'%s_%06d.png' % (subset.encode(), i)
                                    for i in part]}, f)
      os.replace(temp, path)  # a reader never sees half a batch
      paths.append(path)
  with open(os.path.join(output_dir, 'batches.meta'), 'wb') as f:
    pickle.dump({b'label_names': [class_name(k).encode() for k in range(10)],
                 b'num_cases_per_batch': per_batch,
                 b'num_vis': 3072}, f)
  return paths
