#!/usr/bin/env python3
"""Training images/sec of a keras.applications network: the reference the
harness's own models are compared with (benchmarks/performance.py).

The network is trained the way a TF2 user would: random weights
(``weights=None``), plain SGD, one ``tf.function`` per training step with a
GradientTape, on one synthetic batch held on the device for the whole run,
drawn like the harness's synthetic input (truncated normal, mean 127, sd 60;
random labels). Logits and a from-logits loss, as in the harness. Prints one
JSON line.

  python benchmarks/keras_reference.py --model=ResNet50 --batch_size=32
      [--num_batches=10 --num_warmup_batches=3 --image_size=224]
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import tensorflow as tf  # pylint: disable=g-import-not-at-top

DEFAULT_SIZES = {'ResNet50': 224, 'InceptionV3': 299, 'VGG16': 224}


def build(name, image_size, num_classes):
  app = getattr(tf.keras.applications, name)
  return app(weights=None, input_shape=(image_size, image_size, 3),
             classes=num_classes, classifier_activation=None)


def main(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--model', default='ResNet50')
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--image_size', type=int, default=0)
  parser.add_argument('--num_classes', type=int, default=1000)
  parser.add_argument('--num_batches', type=int, default=10)
  parser.add_argument('--num_warmup_batches', type=int, default=3)
  parser.add_argument('--learning_rate', type=float, default=0.005)
  args = parser.parse_args(argv)
  size = args.image_size or DEFAULT_SIZES.get(args.model, 224)

  tf.random.set_seed(1234)
  model = build(args.model, size, args.num_classes)
  optimizer = tf.keras.optimizers.SGD(learning_rate=args.learning_rate)
  images = tf.Variable(tf.random.truncated_normal(
      [args.batch_size, size, size, 3], mean=127.0, stddev=60.0),
                       trainable=False)
  labels = tf.Variable(tf.random.uniform(
      [args.batch_size], 0, args.num_classes, dtype=tf.int32),
                       trainable=False)

  @tf.function
  def train_step():
    with tf.GradientTape() as tape:
      logits = model(images, training=True)
      loss = tf.reduce_mean(
          tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

  for _ in range(args.num_warmup_batches):  # the first one traces
    train_step().numpy()
  losses, times = [], []
  start = time.perf_counter()
  for _ in range(args.num_batches):
    before = time.perf_counter()
    losses.append(float(train_step().numpy()))
    times.append(time.perf_counter() - before)
  elapsed = time.perf_counter() - start
  print(json.dumps({
      'model': args.model, 'batch_size': args.batch_size, 'image_size': size,
      'images_per_sec': args.num_batches * args.batch_size / elapsed,
      'step_times_sec': times, 'losses': losses,
      'keras_version': tf.keras.__version__ if hasattr(
          tf.keras, '__version__') else None,
      'tf_version': tf.__version__}))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
