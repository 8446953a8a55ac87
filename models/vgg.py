"""VGG 11/16/19 (configurations A, D and E).

Reference: Simonyan and Zisserman 2014, "Very Deep Convolutional Networks for
Large-Scale Image Recognition", table 1.

Every network is five stages of 3x3 SAME convolutions (with biases, ReLU),
each stage ending in a 2x2 stride-2 max pool, then the same classifier:
fc 4096, dropout, fc 4096, dropout, logits. The configurations differ only in
how many convolutions each stage has, so one builder reads a table.
"""

import functools

from models import registry
from models.layer_specs import fully_connected, logits

# Filters of each convolution, one list per stage (columns A, D, E of table 1).
STAGES = {
    'vgg11': [[64], [128], [256] * 2, [512] * 2, [512] * 2],
    'vgg16': [[64] * 2, [128] * 2, [256] * 3, [512] * 3, [512] * 3],
    'vgg19': [[64] * 2, [128] * 2, [256] * 4, [512] * 4, [512] * 4],
}
FC_UNITS = (4096, 4096)


def build_vgg(stages, b, images, num_classes):
  x = images
  for stage in stages:
    for filters in stage:
      x = b.conv(x, filters, 3)
    x = b.max_pool(x, 2, 2)           # 224 -> 112 -> 56 -> 28 -> 14 -> 7
  x = b.flatten(x)                    # 7 * 7 * 512 = 25088 features
  x = fully_connected(b, x, FC_UNITS, keep_prob=0.5)
  return registry.ModelOutput(logits(b, x, num_classes))


for _name, _stages in STAGES.items():
  registry.register(registry.ModelSpec(
      _name, registry.IMAGENET, image_size=224, default_batch_size=64,
      default_learning_rate=0.005, build=functools.partial(build_vgg, _stages),
      description='VGG (Simonyan and Zisserman 2014), table 1 config'))
