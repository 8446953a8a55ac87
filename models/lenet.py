"""LeNet-5 style network, as the original tool benchmarks it.

Reference: LeCun et al. 1998, "Gradient-based learning applied to document
recognition". Like the original tool this is the TensorFlow MNIST tutorial
variant (wider layers, ReLU, max pooling, SAME convolutions) rather than the
1998 tanh network, fed 28x28 RGB images and a 1001-way ImageNet head.
"""

from models import registry
from models.layer_specs import (Conv, MaxPool, apply_stack, fully_connected,
                                logits)

FEATURES = [
    Conv(32, 5),       # 28x28x32
    MaxPool(2, 2),     # 14x14x32
    Conv(64, 5),       # 14x14x64
    MaxPool(2, 2),     # 7x7x64 = 3136 features
]
FC_UNITS = (512,)


def build_lenet(b, images, num_classes):
  x = apply_stack(b, images, FEATURES)
  x = fully_connected(b, b.flatten(x), FC_UNITS)
  return registry.ModelOutput(logits(b, x, num_classes))


registry.register(registry.ModelSpec(
    'lenet', registry.IMAGENET, image_size=28, default_batch_size=32,
    default_learning_rate=0.005, build=build_lenet,
    description='LeNet-5 style (TF MNIST tutorial layers) on 28x28 images'))
