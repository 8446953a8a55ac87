"""Images and labels line up: a tiny net learns the generated classes.

A standalone check (no driver): train a two-conv network on the ImageNet
train pipeline in a plain session, then measure accuracy on the validation
split read with eval preprocessing. Chance is 1/3.
"""

import numpy as np
import pytest
import tensorflow as tf

from models import layers
from preprocessing import get_input_source
from tests.preprocessing.conftest import make_params

tf1 = tf.compat.v1

CLASSES = 3
SIZE = 32


def tiny_net(images, is_training):
  builder = layers.Builder(data_format='NHWC', is_training=is_training)
  with tf1.variable_scope('net', reuse=tf1.AUTO_REUSE):
    x = builder.conv(images, 16, 3, stride=2)
    x = builder.conv(x, 32, 3, stride=2)
    x = builder.global_avg_pool(x)
    return builder.dense(x, CLASSES + 1, activation=None)


@pytest.mark.timeout(300)
def test_trains_well_above_chance_on_validation(learnable_shards):
  params = make_params(learnable_shards, distortions=True)
  train = get_input_source(params, SIZE, CLASSES + 1, 16, 1, 'train')
  evaluation = get_input_source(params, SIZE, CLASSES + 1, 10, 1,
                                'validation')
  assert evaluation.num_examples_per_epoch == 30
  graph = tf.Graph()
  with graph.as_default():
    tf1.set_random_seed(1)
    (images, labels), = train.tower_batches(['/cpu:0'])
    logits = tiny_net(images, True)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    step = tf1.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
    (eval_images, eval_labels), = evaluation.tower_batches(['/cpu:0'])
    correct = tf.reduce_sum(tf.cast(tf.equal(
        tf.argmax(tiny_net(eval_images, False), 1, output_type=tf.int32),
        eval_labels), tf.int32))
    with tf1.Session() as sess:
      sess.run(tf1.global_variables_initializer())
      sess.run(train.initializers() + evaluation.initializers())
      losses = [sess.run([step, loss])[1] for _ in range(200)]
      hits = sum(sess.run(correct) for _ in range(3))  # the 30 held out
  # Chance-level cross entropy over 4 outputs is ln 4 = 1.39.
  assert np.mean(losses[-20:]) < 0.7, losses[-20:]
  accuracy = hits / 30.0
  assert accuracy >= 0.8, accuracy  # chance: 1/3
