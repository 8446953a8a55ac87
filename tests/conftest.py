"""Test-wide settings (quiet TensorFlow, repo root importable) and fixtures."""

import os
import sys

import pytest

# Before TensorFlow is imported anywhere: keep its C++ INFO/WARNING lines out
# of test output (errors still show).
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
# The same kernels on every host, for this process and the runs it starts:
# TensorFlow turns oneDNN on by itself only on CPUs with AVX-512 VNNI, BF16
# or AMX. Without it NCHW cannot run on a CPU (run_config refuses it), and
# on an AVX2 host the suite's training runs on TensorFlow's own kernels,
# about half as fast (PERFORMANCE.md's levers: TF_ENABLE_ONEDNN_OPTS=0).
os.environ.setdefault('TF_ENABLE_ONEDNN_OPTS', '1')

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)

# TensorFlow loaded here, the way the harness loads it: without its eager
# load of Keras (process/keras_skip.py), which costs every pytest process
# 2.6 s on a 2-core AVX2 host (7.8 s -> 5.2 s), and the mutation check
# starts one per breakage. A test that uses Keras still gets it on first use.
from tf_cnn_benchmarks.process import keras_skip  # pylint: disable=g-import-not-at-top,wrong-import-position
with keras_skip.skipping_keras_eager_load():
  import tensorflow  # pylint: disable=g-import-not-at-top,wrong-import-position,unused-import


@pytest.fixture(scope='module')
def learnable_shards(tmp_path_factory):
  """ImageNet-format shards of 3 classes that differ by hue.

  90 train images (3 shards) and 30 validation images (2 shards), real
  JPEGs written by the dataset builder: a model that learns them proves
  images and labels line up through the whole pipeline.
  """
  # Imported here: importing TensorFlow must wait for the settings above.
  from preprocessing import build_dataset  # pylint: disable=g-import-not-at-top
  from preprocessing import generated_data  # pylint: disable=g-import-not-at-top
  root = tmp_path_factory.mktemp('learnable')
  generated_data.make_image_folder(str(root / 'images'), num_classes=3,
                                   images_per_class=40, height=48, width=64,
                                   seed=7)
  build_dataset.build(str(root / 'images'), str(root / 'shards'),
                      num_train_shards=3, num_validation_shards=2,
                      validation_fraction=0.25, log=lambda *a: None)
  return str(root / 'shards')
