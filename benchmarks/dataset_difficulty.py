"""How hard the generated dataset is: what a small CNN reaches on it.

Writes the generated dataset (preprocessing/shapes_data.py, the images of
`build-dataset --generate`) in a temporary folder and trains a small
network on it through the harness's own input pipelines, then prints the
held-out top-1 accuracy along the way. The network: three 3x3 convolutions
(32, 64, 64 filters, ReLU, two 2x2 max pools), global average pooling, a
dense classifier; momentum SGD 0.05 / 0.9, batch 64; no batch norm, so the
accuracy is the weights' alone. Each configuration runs --seeds times.

  python benchmarks/dataset_difficulty.py [--steps 2000 --seeds 2
      --configs cifar10,imagenet100 --quick]

Configurations: cifar10 (the CIFAR-10 format: 10 classes, 32x32, 500
training and 100 held-out images per class, the CIFAR pipeline: pad, crop,
flip); imagenet10 and imagenet100 (the ImageNet format: 10 or 100 classes,
64x64 JPEGs, 100 training and 20 held-out images per class, the ImageNet
pipeline: distorted box crop, flip, resize to 64; evaluation: central
crop). Chance is 1/classes.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
import types

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

import tensorflow as tf  # pylint: disable=g-import-not-at-top

from models import layers  # pylint: disable=g-import-not-at-top
from preprocessing import build_dataset  # pylint: disable=g-import-not-at-top
from preprocessing import get_input_source  # pylint: disable=g-import-not-at-top
from preprocessing import shapes_data  # pylint: disable=g-import-not-at-top

tf1 = tf.compat.v1

# name -> (format, classes, image size, train and held-out per class)
CONFIGS = {
    'cifar10': ('cifar10', 10, 32, 500, 100),
    'imagenet10': ('imagenet', 10, 64, 100, 20),
    'imagenet100': ('imagenet', 100, 64, 100, 20),
}
BATCH = 64
EVAL_BATCH = 100


def small_net(images, num_outputs, is_training):
  builder = layers.Builder(data_format='NHWC', is_training=is_training)
  with tf1.variable_scope('net', reuse=tf1.AUTO_REUSE):
    x = builder.conv(images, 32, 3)
    x = builder.max_pool(x, 2, 2)
    x = builder.conv(x, 64, 3)
    x = builder.max_pool(x, 2, 2)
    x = builder.conv(x, 64, 3)
    x = builder.global_avg_pool(x)
    return builder.dense(x, num_outputs, activation=None)


def params_for(data_dir, data_name, seed):
  return types.SimpleNamespace(
      data_dir=data_dir, data_name=data_name, distortions=False,
      resize_method='bilinear', fuse_decode_and_crop=True,
      datasets_num_private_threads=None, datasets_use_prefetch=True,
      datasets_prefetch_buffer_size=1, datasets_use_caching=False,
      datasets_parallel_interleave_cycle_length=None, tf_random_seed=seed)


def write(name, root):
  fmt, classes, size, train, held = CONFIGS[name]
  directory = os.path.join(root, name)
  if fmt == 'cifar10':
    shapes_data.write_cifar10(directory, train, held, seed=0)
  else:
    build_dataset.write_generated_imagenet(directory, classes, train, held,
                                           size, size, seed=0)
  return directory


def train_and_evaluate(name, directory, steps, seed, report_every):
  """[(step, held-out top-1)] of one training run."""
  fmt, classes, size, _, held = CONFIGS[name]
  # ImageNet-format labels are 1..K (0: background), so K + 1 outputs.
  outputs = classes if fmt == 'cifar10' else classes + 1
  params = params_for(directory, fmt, seed)
  train = get_input_source(params, size, outputs, BATCH, 1, 'train')
  held_out = get_input_source(params, size, outputs, EVAL_BATCH, 1,
                              'validation')
  eval_steps = classes * held // EVAL_BATCH
  curve = []
  with tf.Graph().as_default():
    tf1.set_random_seed(seed)
    (images, labels), = train.tower_batches(['/cpu:0'])
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=small_net(images, outputs, True)))
    step = tf1.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
    (eval_images, eval_labels), = held_out.tower_batches(['/cpu:0'])
    correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(
        small_net(eval_images, outputs, False), 1, output_type=tf.int32),
                                             eval_labels), tf.int32))
    with tf1.Session() as sess:
      sess.run(tf1.global_variables_initializer())
      sess.run(train.initializers() + held_out.initializers())
      for i in range(1, steps + 1):
        sess.run(step)
        if i % report_every == 0 or i == steps:
          hits = sum(sess.run(correct) for _ in range(eval_steps))
          curve.append((i, hits / float(eval_steps * EVAL_BATCH)))
  return curve


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--steps', type=int, default=2000)
  parser.add_argument('--seeds', type=int, default=2)
  parser.add_argument('--configs', default='cifar10,imagenet10,imagenet100')
  parser.add_argument('--quick', action='store_true',
                      help='100 steps, one seed, cifar10 only: checks the '
                      'script runs, measures nothing.')
  args = parser.parse_args(argv)
  names = args.configs.split(',')
  if args.quick:
    args.steps, args.seeds, names = 100, 1, ['cifar10']
  unknown = [n for n in names if n not in CONFIGS]
  if unknown:
    parser.error('unknown config(s) %s; choose from %s'
                 % (', '.join(unknown), ', '.join(CONFIGS)))
  root = tempfile.mkdtemp(prefix='difficulty_')
  report_every = max(1, args.steps // 4)
  try:
    print('small CNN (3 conv, no batch norm), batch %d, %d steps, held-out '
          'top-1 after each %d steps:' % (BATCH, args.steps, report_every))
    for name in names:
      directory = write(name, root)
      fmt, classes, size, train, held = CONFIGS[name]
      finals = []
      for seed in range(1, args.seeds + 1):
        start = time.time()
        curve = train_and_evaluate(name, directory, args.steps, seed,
                                   report_every)
        finals.append(curve[-1][1])
        print('%-12s seed %d  %s  (%.0f s)' % (
            name, seed, '  '.join('%d: %.3f' % c for c in curve),
            time.time() - start), flush=True)
      print('%-12s %d classes, %dx%d, %d train/%d held-out per class: '
            'top-1 %s after %d steps (chance %.3f)' % (
                name, classes, size, size, train, held,
                ', '.join('%.3f' % f for f in finals), args.steps,
                1.0 / classes), flush=True)
  finally:
    shutil.rmtree(root, ignore_errors=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
