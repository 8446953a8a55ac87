"""ncf (NeuMF): parameter count and shapes of one tower.

Sizes are the original's (tensorflow/benchmarks,
scripts/tf_cnn_benchmarks/models/experimental/official_ncf_model.py): 138,493
users and 26,744 items (MovieLens-20M), mf_dim 64, MLP layers (256, 256, 128,
64), handed to the Model Garden's official/recommendation/neumf_model.py,
whose construct_model gives each id column one table mf_dim + layers[0] / 2
wide and ends in a one-unit dense layer. No published total exists for this
configuration: the count below is a hand count from those sizes.
"""

from models import ncf
from models import registry
from tests.models import zoo_checks

WIDTH = 64 + 256 // 2                       # GMF part + MLP half: 192
HAND_COUNT = (
    138_493 * WIDTH                         # user table    26,590,656
    + 26_744 * WIDTH                        # item table     5,134,848
    + (256 * 256 + 256)                     # MLP 256 -> 256    65,792
    + (256 * 128 + 128)                     # MLP 256 -> 128    32,896
    + (128 * 64 + 64)                       # MLP 128 -> 64      8,256
    + ((64 + 64) * 1 + 1))                  # [GMF, MLP] -> 1      129


def test_parameter_count_is_the_hand_count():
  assert HAND_COUNT == 31_832_577
  assert zoo_checks.trainable_count('ncf', registry.IMAGENET) == HAND_COUNT


def test_sizes_are_the_originals():
  spec = registry.get_model('ncf', registry.IMAGENET)
  assert spec.reads_ids and spec.id_vocab_sizes == (138_493, 26_744)
  assert (spec.default_batch_size, spec.default_learning_rate) == (2048,
                                                                   0.0005)
  assert (ncf.MF_DIM, ncf.MLP_LAYERS) == (64, (256, 256, 128, 64))


def test_tables_and_two_class_head():
  variables, logits_shape = zoo_checks.trainable_shapes('ncf',
                                                        registry.IMAGENET)
  assert variables['v0/embedding_user'] == [138_493, WIDTH]
  assert variables['v0/embedding_item'] == [26_744, WIDTH]
  assert variables['v0/rating/kernel'] == [128, 1]
  # Two classes: the original's constant class-0 logit and the model's.
  assert logits_shape == [2, 2]
