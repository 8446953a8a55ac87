"""Small generated datasets for tests and the input-only benchmark.

There is no ImageNet or CIFAR download here, so tests make their own: real
JPEG files in class folders (for build-dataset) and CIFAR-10 python-version
pickles. The image classes are *learnable*: each class has its own hue, and
every image has noise and a random patch, so a tiny network reaches well
above chance only if images and labels line up through the pipeline.
"""

import colorsys
import os
import pickle

import numpy as np

from preprocessing import codec as codec_lib


def class_colour(label, num_classes):
  """RGB in [0, 255] of class `label` (hues spread evenly around the wheel)."""
  r, g, b = colorsys.hsv_to_rgb(label / float(num_classes), 0.85, 0.85)
  return np.array([r, g, b]) * 255.0


def class_image(rng, label, num_classes, height, width):
  """uint8 [h, w, 3]: the class colour, noise, and a darker random patch."""
  image = np.tile(class_colour(label, num_classes), (height, width, 1))
  top, left = rng.randint(0, height // 2), rng.randint(0, width // 2)
  patch_h = rng.randint(height // 4, height // 2 + 1)
  patch_w = rng.randint(width // 4, width // 2 + 1)
  image[top:top + patch_h, left:left + patch_w] *= rng.uniform(0.4, 0.8)
  image += rng.normal(0.0, 12.0, image.shape)
  return np.clip(image, 0, 255).astype(np.uint8)


def make_image_folder(root, num_classes=3, images_per_class=10, height=48,
                      width=64, seed=0, codec=None):
  """Writes root/<synset>/img_NNNN.jpg; returns the sorted class names.

  Synsets look like ImageNet's ('n00000000', ...) and sort in class order.
  """
  rng = np.random.RandomState(seed)
  own_codec = codec is None
  codec = codec or codec_lib.ImageCodec()
  names = ['n%08d' % k for k in range(num_classes)]
  try:
    for k, name in enumerate(names):
      directory = os.path.join(root, name)
      os.makedirs(directory, exist_ok=True)
      for i in range(images_per_class):
        pixels = class_image(rng, k, num_classes, height, width)
        with open(os.path.join(directory, 'img_%04d.jpg' % i), 'wb') as f:
          f.write(codec.encode_jpeg(pixels))
  finally:
    if own_codec:
      codec.close()
  return names


def make_cifar_batches(root, images_per_batch=20, num_train_batches=5,
                       seed=0, num_classes=10):
  """Writes CIFAR-10 python-version batches (data_batch_1..N, test_batch).

  Each is a pickled dict with b'data' uint8 [N, 3072] (channel planes R, G,
  B, each 32x32 row-major) and b'labels' (a list of ints), like the real one.
  """
  rng = np.random.RandomState(seed)
  os.makedirs(root, exist_ok=True)
  names = ['data_batch_%d' % i for i in range(1, num_train_batches + 1)]
  for name in names + ['test_batch']:
    labels = [int(rng.randint(num_classes)) for _ in range(images_per_batch)]
    data = np.stack([
        class_image(rng, l, num_classes, 32, 32).transpose(2, 0, 1).reshape(-1)
        for l in labels])
    with open(os.path.join(root, name), 'wb') as f:
      pickle.dump({b'batch_label': name.encode(), b'labels': labels,
                   b'data': data, b'filenames': [b''] * len(labels)}, f)
  return root
