"""AlexNet: the one-tower ImageNet net and the CIFAR-10 tutorial net.

ImageNet: Krizhevsky 2014, "One weird trick for parallelizing convolutional
neural networks" (the one-tower "OWT" AlexNet): the 2012 AlexNet without the
two-GPU grouping and without LRN, with 64/192/384/384/256 filters. These are
the widths the original tool uses. (torchvision's AlexNet, also OWT-based,
narrows the fourth convolution to 256; see tests/models/test_classic.py.)
The input is 227x227 so that the unpadded 11x11 stride-4 convolution gives
the 55x55 map of the paper.

CIFAR-10: the network of TensorFlow's cifar10 tutorial, which the original
tool registers as "alexnet" for CIFAR: two 5x5 convolutions with pooling and
LRN, two fully connected layers. The tutorial crops to 24x24; here (as in the
original tool) the full 32x32 image is used, so the first dense layer is
larger. Initialisation follows the tutorial's standard deviations (its 0.1
bias initialisation is replaced by the builder's zeros; the difference only
matters for convergence speed in the first steps).
"""

from models import registry
from models.layer_specs import (Conv, Lrn, MaxPool, apply_stack,
                                fully_connected, logits)

IMAGENET_FEATURES = [
    Conv(64, 11, 4, 'VALID'),   # 55x55x64
    MaxPool(3, 2),              # 27x27x64
    Conv(192, 5),               # 27x27x192
    MaxPool(3, 2),              # 13x13x192
    Conv(384, 3),
    Conv(384, 3),
    Conv(256, 3),               # 13x13x256
    MaxPool(3, 2),              # 6x6x256 = 9216 features
]
IMAGENET_FC_UNITS = (4096, 4096)


def build_alexnet_imagenet(b, images, num_classes):
  x = apply_stack(b, images, IMAGENET_FEATURES)
  x = fully_connected(b, b.flatten(x), IMAGENET_FC_UNITS, keep_prob=0.5)
  return registry.ModelOutput(logits(b, x, num_classes))


# The tutorial's LRN: window of 9 channels, alpha scaled by the window size.
TUTORIAL_LRN = Lrn(depth_radius=4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)

CIFAR_FEATURES = [
    Conv(64, 5, stddev=5e-2),   # 32x32x64
    MaxPool(3, 2, 'SAME'),      # 16x16x64
    TUTORIAL_LRN,
    Conv(64, 5, stddev=5e-2),   # 16x16x64
    TUTORIAL_LRN,
    MaxPool(3, 2, 'SAME'),      # 8x8x64 = 4096 features
]
CIFAR_FC_UNITS = (384, 192)


def build_alexnet_cifar10(b, images, num_classes):
  x = apply_stack(b, images, CIFAR_FEATURES)
  x = fully_connected(b, b.flatten(x), CIFAR_FC_UNITS, stddev=0.04)
  # The tutorial's classifier init: stddev 1 / (width of the last layer).
  return registry.ModelOutput(
      logits(b, x, num_classes, stddev=1.0 / CIFAR_FC_UNITS[-1]))


registry.register(registry.ModelSpec(
    'alexnet', registry.IMAGENET, image_size=227, default_batch_size=512,
    default_learning_rate=0.005, build=build_alexnet_imagenet,
    description='one-tower AlexNet (Krizhevsky 2014), no LRN'))
# Learning rate 0.1: the cifar10 tutorial's initial rate, which the original
# tool also uses for this model (its schedule decays it 10x every 100 epochs).
registry.register(registry.ModelSpec(
    'alexnet', registry.CIFAR10, image_size=32, default_batch_size=128,
    default_learning_rate=0.1, build=build_alexnet_cifar10,
    description='cifar10 tutorial net (2 conv + LRN, fc 384, fc 192)'))
