"""The trivial model: one dense layer, for measuring harness overhead.

As in the original tool it flattens the image, squeezes it through a
1-unit layer and widens again to 4096 before the classifier: almost no
compute, yet the update touches a few million parameters, so a step is
dominated by the harness (input, session.run, update).
"""

from models import registry


def build_trivial(b, images, num_classes):
  x = b.flatten(images)
  x = b.dense(x, 1, activation='linear', name='fc_squeeze')
  x = b.dense(x, 4096, name='fc_wide')
  logits = b.dense(x, num_classes, activation='linear', name='logits')
  return registry.ModelOutput(logits)


registry.register(registry.ModelSpec(
    'trivial', registry.IMAGENET, image_size=227, default_batch_size=32,
    default_learning_rate=0.005, build=build_trivial,
    description='flatten, dense 1, dense 4096, classifier (overhead probe)'))
registry.register(registry.ModelSpec(
    'trivial', registry.CIFAR10, image_size=32, default_batch_size=32,
    default_learning_rate=0.005, build=build_trivial,
    description='flatten, dense 1, dense 4096, classifier (overhead probe)'))
