"""The trivial model: one dense layer, for measuring harness overhead.

As in the original tool it flattens the image, squeezes it through a
1-unit layer and widens again to 4096 before the classifier: almost no
compute, yet the update touches a few million parameters, so a step is
dominated by the harness (input, session.run, update).
"""

from models import registry

# The squeeze layer sees every pixel (154,587 inputs at 227x227), so one SGD
# step moves its output by about lr x |image|^2 x gradient: at the usual
# 0.005 that is a ~200x overshoot and the loss diverges within a few steps
# (the original's trivial model produced NaN losses). A rate this small keeps
# the loss finite; the trivial model exists to measure overhead, not to learn.
TRIVIAL_LEARNING_RATE = 1e-5


def build_trivial(b, images, num_classes):
  x = b.flatten(images)
  x = b.dense(x, 1, activation='linear', name='fc_squeeze')
  x = b.dense(x, 4096, name='fc_wide')
  logits = b.dense(x, num_classes, activation='linear', name='logits')
  return registry.ModelOutput(logits)


registry.register(registry.ModelSpec(
    'trivial', registry.IMAGENET, image_size=227, default_batch_size=32,
    default_learning_rate=TRIVIAL_LEARNING_RATE, build=build_trivial,
    description='flatten, dense 1, dense 4096, classifier (overhead probe)'))
registry.register(registry.ModelSpec(
    'trivial', registry.CIFAR10, image_size=32, default_batch_size=32,
    default_learning_rate=TRIVIAL_LEARNING_RATE, build=build_trivial,
    description='flatten, dense 1, dense 4096, classifier (overhead probe)'))
