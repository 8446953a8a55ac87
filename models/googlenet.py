"""GoogLeNet (Inception v1), as the original tool benchmarks it.

Reference: Szegedy et al. 2014, "Going Deeper with Convolutions", table 1.

Differences from the paper, kept because the original tool has them (the
benchmark should do the same work): no local response normalisation in the
stem, no dropout before the classifier, and no auxiliary classifiers. The
convolutions have biases and no batch norm (the paper predates batch norm).
"""

from models import registry
from models.layer_specs import (AvgPool, Conv, MaxPool, Mixed, apply_stack,
                                logits)

STEM = [
    Conv(64, 7, 2),             # 112x112x64
    MaxPool(3, 2, 'SAME'),      # 56x56x64
    Conv(64, 1),
    Conv(192, 3),               # 56x56x192
    MaxPool(3, 2, 'SAME'),      # 28x28x192
]


def inception_v1(name, n1x1, n3x3_reduce, n3x3, n5x5_reduce, n5x5, pool_proj):
  """One inception module, arguments in the column order of table 1."""
  return Mixed([
      [Conv(n1x1, 1)],
      [Conv(n3x3_reduce, 1), Conv(n3x3, 3)],
      [Conv(n5x5_reduce, 1), Conv(n5x5, 5)],
      [MaxPool(3, 1, 'SAME'), Conv(pool_proj, 1)],
  ], name)


# Table 1 of the paper, from inception (3a) to (5b).
BODY = [                                                   # output
    inception_v1('inception_3a', 64, 96, 128, 16, 32, 32),     # 28x28x256
    inception_v1('inception_3b', 128, 128, 192, 32, 96, 64),   # 28x28x480
    MaxPool(3, 2, 'SAME'),                                     # 14x14x480
    inception_v1('inception_4a', 192, 96, 208, 16, 48, 64),    # 14x14x512
    inception_v1('inception_4b', 160, 112, 224, 24, 64, 64),
    inception_v1('inception_4c', 128, 128, 256, 24, 64, 64),
    inception_v1('inception_4d', 112, 144, 288, 32, 64, 64),   # 14x14x528
    inception_v1('inception_4e', 256, 160, 320, 32, 128, 128),  # 14x14x832
    MaxPool(3, 2, 'SAME'),                                     # 7x7x832
    inception_v1('inception_5a', 256, 160, 320, 32, 128, 128),
    inception_v1('inception_5b', 384, 192, 384, 48, 128, 128),  # 7x7x1024
    AvgPool(7, 1),                                             # 1x1x1024
]


def build_googlenet(b, images, num_classes):
  x = apply_stack(b, images, STEM + BODY, batch_norm=False)
  return registry.ModelOutput(logits(b, b.flatten(x), num_classes))


registry.register(registry.ModelSpec(
    'googlenet', registry.IMAGENET, image_size=224, default_batch_size=32,
    default_learning_rate=0.005, build=build_googlenet,
    description='Inception v1 (Szegedy et al. 2014), no aux heads, no LRN'))
