"""NASNet-A (Zoph et al. 2018, "Learning Transferable Architectures"), ImageNet.

NASNet-A is two searched cells repeated: a *normal* cell that keeps the
spatial size and a *reduction* cell that halves it. Each cell takes the two
previous cells' outputs (h = the last one, h_prev = the one before), builds
five blocks that each add two operations applied to earlier states, and
concatenates some of the states. Both cells are data (``NORMAL_CELL``,
``REDUCTION_CELL``, transcribed from the paper's figure 4) fed to one cell
builder, and both sizes are one ``NasnetConfig`` fed to one network builder:

* ``nasnet``: NASNet-A Mobile "4@1056" (4 normal cells per stack, 1056
  filters before the classifier), 224 pixels;
* ``nasnetlarge``: NASNet-A Large "6@4032", 331 pixels.

Details the paper leaves open (the 1x1 convolutions that give every input of
a cell the cell's filter count, the "factorized reduction" of an h_prev that
is twice as large, separable operations applied twice, the stem) follow the
authors' released models, so parameter counts match the published ones.

Left out for benchmarking: drop-path (a regulariser that skips paths at
random; it changes no shapes and little compute) and the auxiliary head (the
original tool built these networks without one, so its benchmark did not
train one).
"""

import dataclasses
from typing import Tuple

import tensorflow as tf

from models import registry

tf1 = tf.compat.v1


@dataclasses.dataclass(frozen=True)
class CellSpec:
  """A searched cell.

  blocks: five blocks, each a pair of (operation, input state); the block's
    output is the sum of the two operations' outputs. States are 'h', 'h_prev'
    and 'b0'..'b4' (outputs of earlier blocks of the same cell).
  outputs: states concatenated (in order) into the cell's output.
  """
  blocks: Tuple[Tuple[Tuple[str, str], Tuple[str, str]], ...]
  outputs: Tuple[str, ...]


# Figure 4, left. Output: 6 x filters channels.
NORMAL_CELL = CellSpec(
    blocks=(
        (('sep5x5', 'h'), ('sep3x3', 'h_prev')),
        (('sep5x5', 'h_prev'), ('sep3x3', 'h_prev')),
        (('avg3x3', 'h'), ('identity', 'h_prev')),
        (('avg3x3', 'h_prev'), ('avg3x3', 'h_prev')),
        (('sep3x3', 'h'), ('identity', 'h')),
    ),
    outputs=('h_prev', 'b0', 'b1', 'b2', 'b3', 'b4'))

# Figure 4, right. Operations on the cell inputs have stride 2, operations on
# block outputs (already reduced) stride 1. Output: 4 x filters channels.
REDUCTION_CELL = CellSpec(
    blocks=(
        (('sep5x5', 'h'), ('sep7x7', 'h_prev')),
        (('max3x3', 'h'), ('sep7x7', 'h_prev')),
        (('avg3x3', 'h'), ('sep5x5', 'h_prev')),
        (('identity', 'b1'), ('avg3x3', 'b0')),
        (('sep3x3', 'b0'), ('max3x3', 'h')),
    ),
    outputs=('b1', 'b2', 'b3', 'b4'))

CELL_INPUTS = ('h', 'h_prev')

# The last stack's normal cells output 6 x filters, and filters double at each
# of the two reductions: penultimate filters = 6 * 4 * first-stack filters.
PENULTIMATE_TO_FILTERS = 24


@dataclasses.dataclass(frozen=True)
class NasnetConfig:
  """One NASNet-A size, "N@P" in the paper's notation.

  stem_filters: filters of the first 3x3 stride-2 convolution.
  normal_cells_per_stack: N, normal cells in each of the three stacks.
  penultimate_filters: P, channels of the last cell's output.
  skip_reduction_input: the released Large model feeds the first normal cell
    after a reduction with the output of the cell *two* cells before that
    reduction (the reduction's own h_prev) instead of one; shapes and
    parameters are the same either way, only the wiring differs.
  dropout_keep_prob: before the classifier (paper: 0.5).
  """
  stem_filters: int
  normal_cells_per_stack: int
  penultimate_filters: int
  skip_reduction_input: bool = False
  dropout_keep_prob: float = 0.5


NASNET_MOBILE = NasnetConfig(stem_filters=32, normal_cells_per_stack=4,
                             penultimate_filters=1056)
NASNET_LARGE = NasnetConfig(stem_filters=96, normal_cells_per_stack=6,
                            penultimate_filters=4032,
                            skip_reduction_input=True)


@dataclasses.dataclass(frozen=True)
class PlannedCell:
  """One cell of the network. Its h is the last cell output; its h_prev is
  ``h_prev_back`` outputs back, counting h as 1 (so 2 normally)."""
  scope: str
  spec: CellSpec
  filters: int
  h_prev_back: int = 2


def cell_plan(config):
  """The network's cells in order.

  Stem: two reduction cells at 1/4 and 1/2 of the first stack's filters.
  Then three stacks of N normal cells with a reduction cell (filters doubled)
  before the second and third.
  """
  filters = config.penultimate_filters // PENULTIMATE_TO_FILTERS
  plan = [PlannedCell('cell_stem_0', REDUCTION_CELL, filters // 4),
          PlannedCell('cell_stem_1', REDUCTION_CELL, filters // 2)]
  normal_index = 0
  for stack in range(3):
    stack_filters = filters * 2 ** stack
    if stack > 0:
      plan.append(PlannedCell('reduction_cell_%d' % (stack - 1),
                              REDUCTION_CELL, stack_filters))
    for i in range(config.normal_cells_per_stack):
      skip = config.skip_reduction_input and stack > 0 and i == 0
      plan.append(PlannedCell('cell_%d' % normal_index, NORMAL_CELL,
                              stack_filters, h_prev_back=3 if skip else 2))
      normal_index += 1
  return plan


# -- operations --------------------------------------------------------------

def _relu(b, x):
  return b.activation(x, 'relu')


def _stacked_separable(b, x, filters, kernel, stride):
  """ReLU, separable conv, BN, applied twice (the stride on the first).

  Applying each separable operation twice is how the authors' released
  models (and their published parameter counts) implement it.
  """
  for i in range(2):
    x = b.separable_conv_bn(_relu(b, x), filters, kernel,
                            stride=stride if i == 0 else 1,
                            name='separable%d' % i)
  return x


def _apply_operation(b, x, operation, filters, stride):
  if operation.startswith('sep'):
    kernel = int(operation[len('sep')])
    return _stacked_separable(b, x, filters, kernel, stride)
  # Pools and identity keep the channel count; the cell's input 1x1
  # convolutions already gave every state ``filters`` channels.
  if b.channels(x) != filters:
    raise ValueError('%s on %d channels in a %d-filter cell' % (
        operation, b.channels(x), filters))
  if operation == 'avg3x3':
    return b.avg_pool(x, 3, stride, padding='SAME')
  if operation == 'max3x3':
    return b.max_pool(x, 3, stride, padding='SAME')
  if operation == 'identity' and stride == 1:
    return x
  raise ValueError('unsupported operation %r (stride %d)' % (operation,
                                                             stride))


# -- cell inputs -------------------------------------------------------------

def _shift_one_pixel(b, x):
  """x moved up and left by one pixel, zero-filled at the bottom/right."""
  x = b.pad(x, (0, 1))
  if b.data_format == 'NHWC':
    return x[:, 1:, 1:, :]
  return x[:, :, 1:, 1:]


def _factorized_reduction(b, x, filters):
  """Halves the spatial size of ``x`` and maps it to ``filters`` channels.

  A strided 1x1 convolution alone would only see every other pixel; two of
  them on grids offset by one pixel, concatenated, see all of them.
  """
  with tf1.variable_scope('factorized_reduction'):
    half = filters // 2
    path1 = b.conv(b.avg_pool(x, 1, 2), half, 1, activation=None,
                   use_bias=False, name='path1')
    path2 = b.conv(b.avg_pool(_shift_one_pixel(b, x), 1, 2), filters - half,
                   1, activation=None, use_bias=False, name='path2')
    return b.batch_norm(b.concat([path1, path2]))


def _squeeze(b, x, filters, name):
  """ReLU, 1x1 convolution to ``filters``, BN."""
  return b.conv(_relu(b, x), filters, 1, activation=None, batch_norm=True,
                name=name)


def _match_h_prev(b, h_prev, h, filters):
  """Gives h_prev the spatial size of h and ``filters`` channels.

  With no h_prev yet (first stem cell) h itself serves, unchanged.
  """
  if h_prev is None:
    return h
  if b.spatial(h_prev) != b.spatial(h):
    return _factorized_reduction(b, _relu(b, h_prev), filters)
  if b.channels(h_prev) != filters:
    return _squeeze(b, h_prev, filters, name='h_prev_1x1')
  return h_prev


def build_cell(b, spec, h, h_prev, filters):
  """One NASNet-A cell with ``filters`` channels per block.

  Both inputs first get ``filters`` channels (and h_prev h's spatial size).
  In a reduction cell, operations reading a cell input have stride 2.
  """
  reduction = spec is REDUCTION_CELL
  states = {
      'h_prev': _match_h_prev(b, h_prev, h, filters),
      'h': _squeeze(b, h, filters, name='h_1x1'),
  }
  for i, block in enumerate(spec.blocks):
    with tf1.variable_scope('b%d' % i):
      outputs = []
      for side, (operation, source) in zip(('left', 'right'), block):
        stride = 2 if reduction and source in CELL_INPUTS else 1
        with tf1.variable_scope(side):
          outputs.append(_apply_operation(b, states[source], operation,
                                          filters, stride))
      states['b%d' % i] = outputs[0] + outputs[1]
  return b.concat([states[name] for name in spec.outputs])


# -- network -----------------------------------------------------------------

def build_nasnet(b, images, num_classes, config):
  # Stem convolution: no ReLU here, every cell starts with one.
  x = b.conv(images, config.stem_filters, 3, stride=2, padding='VALID',
             activation=None, batch_norm=True, name='conv0')
  cell_outputs = [None, x]
  for cell in cell_plan(config):
    with tf1.variable_scope(cell.scope):
      cell_outputs.append(build_cell(b, cell.spec, cell_outputs[-1],
                                     cell_outputs[-cell.h_prev_back],
                                     cell.filters))
  x = b.global_avg_pool(_relu(b, cell_outputs[-1]))
  x = b.dropout(x, config.dropout_keep_prob)
  logits = b.dense(x, num_classes, activation='linear', name='logits')
  return registry.ModelOutput(logits)


def build_nasnet_mobile(b, images, num_classes):
  return build_nasnet(b, images, num_classes, NASNET_MOBILE)


def build_nasnet_large(b, images, num_classes):
  return build_nasnet(b, images, num_classes, NASNET_LARGE)


# Defaults of the original tool (models/tf1_only/nasnet_model.py): 224 px,
# batch 32 for Mobile; 331 px, batch 16 for Large; learning rate 0.005.
registry.register(registry.ModelSpec(
    'nasnet', registry.IMAGENET, image_size=224, default_batch_size=32,
    default_learning_rate=0.005, build=build_nasnet_mobile,
    description='NASNet-A Mobile 4@1056 (Zoph et al. 2018)'))
registry.register(registry.ModelSpec(
    'nasnetlarge', registry.IMAGENET, image_size=331, default_batch_size=16,
    default_learning_rate=0.005, build=build_nasnet_large,
    description='NASNet-A Large 6@4032 (Zoph et al. 2018)'))
