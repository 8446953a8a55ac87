"""OverFeat, the "fast" model.

Reference: Sermanet et al. 2014, "OverFeat: Integrated Recognition,
Localization and Detection using Convolutional Networks", table 1 (fast
model, 231x231 input). Layers 1-2 are unpadded, 3-5 are zero padded by one
(SAME); there is no LRN. Dropout on the two hidden fully connected layers.
"""

from models import registry
from models.layer_specs import (Conv, MaxPool, apply_stack, fully_connected,
                                logits)

FEATURES = [
    Conv(96, 11, 4, 'VALID'),   # 56x56x96
    MaxPool(2, 2),              # 28x28x96
    Conv(256, 5, 1, 'VALID'),   # 24x24x256
    MaxPool(2, 2),              # 12x12x256
    Conv(512, 3),
    Conv(1024, 3),
    Conv(1024, 3),              # 12x12x1024
    MaxPool(2, 2),              # 6x6x1024 = 36864 features
]
FC_UNITS = (3072, 4096)


def build_overfeat(b, images, num_classes):
  x = apply_stack(b, images, FEATURES)
  x = fully_connected(b, b.flatten(x), FC_UNITS, keep_prob=0.5)
  return registry.ModelOutput(logits(b, x, num_classes))


registry.register(registry.ModelSpec(
    'overfeat', registry.IMAGENET, image_size=231, default_batch_size=32,
    default_learning_rate=0.005, build=build_overfeat,
    description='OverFeat fast model (Sermanet et al. 2014)'))
