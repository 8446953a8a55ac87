"""ncf: NeuMF (neural collaborative filtering), on synthetic user/item ids.

The original tool registered ``ncf`` as a wrapper around the Model Garden's
NeuMF at the MovieLens-20M sizes, and ran it on synthetic data only. The
network, built here from TensorFlow ops:

* one embedding table per id column (users, items), each row MF_DIM +
  MLP_LAYERS[0] / 2 wide; the first MF_DIM columns feed the GMF branch, the
  rest the MLP branch (one table and a slice, as the Model Garden does,
  rather than four tables: one gather per column instead of two);
* GMF: the element-wise product of the user and item MF vectors;
* MLP: the concatenated MLP vectors (MLP_LAYERS[0] wide) through ReLU
  dense layers of MLP_LAYERS[1:];
* one linear unit on [GMF, MLP]: the logit that the user interacted with
  the item.

The head returns two-class logits [1, logit]: the original's loss is a
two-class softmax cross-entropy whose class-0 logit is the constant 1 (a
sigmoid of logit - 1), so the harness's usual sparse softmax cross-entropy on
these logits is that loss, and top-1 accuracy means "predicted the label".
Examples per second are reported as images/sec, as the original did.
"""

import tensorflow as tf

from models import registry

tf1 = tf.compat.v1

# MovieLens-20M's users and items, the sizes the original used (it printed
# them from the Model Garden's ml-20m preprocessing).
NUM_USERS = 138493
NUM_ITEMS = 26744
MF_DIM = 64
MLP_LAYERS = (256, 256, 128, 64)
# The original's class-0 logit (see the module docstring).
CLASS_0_LOGIT = 1.0


def _embedding(name, ids, vocab_size, width, compute_dtype):
  """Rows ``ids`` of a [vocab_size, width] float32 table.

  The table stays float32 and only the gathered rows are cast, so a reduced
  compute dtype does not copy the whole table every step; the gradient of
  the lookup is sparse (the rows of the batch). embedding_lookup rather
  than a bare gather: it places the gather beside the table, so with one
  shared copy (parameter_server) a tower fetches only its rows; a bare
  gather on a second tower's device fails to build its gradient there (a
  colocation error between the two devices).
  """
  table = tf1.get_variable(
      name, shape=[vocab_size, width], dtype=tf.float32,
      initializer=tf1.glorot_uniform_initializer())
  rows = tf.nn.embedding_lookup(table, ids)
  return tf.cast(rows, compute_dtype)


def build_ncf(b, ids, num_classes):
  del num_classes  # always two: see the module docstring
  mlp_half = MLP_LAYERS[0] // 2
  width = MF_DIM + mlp_half
  user = _embedding('embedding_user', ids[:, 0], NUM_USERS, width,
                    b.compute_dtype)
  item = _embedding('embedding_item', ids[:, 1], NUM_ITEMS, width,
                    b.compute_dtype)
  gmf = user[:, :MF_DIM] * item[:, :MF_DIM]
  mlp = tf.concat([user[:, MF_DIM:], item[:, MF_DIM:]], axis=1)
  for units in MLP_LAYERS[1:]:
    mlp = b.dense(mlp, units, activation='relu')
  logit = b.dense(tf.concat([gmf, mlp], axis=1), 1, activation='linear',
                  name='rating')
  logits = tf.concat([tf.fill(tf.shape(logit), tf.constant(
      CLASS_0_LOGIT, logit.dtype)), logit], axis=1)
  return registry.ModelOutput(logits)


registry.register(registry.ModelSpec(
    'ncf', registry.IMAGENET, image_size=0, default_batch_size=2048,
    default_learning_rate=0.0005, build=build_ncf,
    description='NeuMF (GMF + MLP) on MovieLens-20M-sized synthetic ids',
    inputs=registry.IDS, id_vocab_sizes=(NUM_USERS, NUM_ITEMS),
    label_classes=2))
