"""The driver on real TFRecords: learning, eval, input-only, bad data."""

import json
import os
import re

import pytest

from tests.driver_helpers import run_cli, run_quietly
from tf_cnn_benchmarks import exit_codes


@pytest.mark.timeout(600)
def test_train_then_eval_is_well_above_chance(learnable_shards, tmp_path):
  """Images and labels line up through builder, pipeline, model and eval."""
  train_dir = str(tmp_path / 'train')
  trained, text = run_quietly(
      model='lenet', data_dir=learnable_shards, batch_size=16,
      num_batches=150, num_warmup_batches=0, optimizer='sgd',
      init_learning_rate=0.01, train_dir=train_dir, display_every=50)
  assert trained.status == 'ok', trained.failure
  assert trained.diverged_at_step is None, text
  assert 'Dataset:     imagenet\n' in text
  assert re.search(r'^Input pipeline alone: [\d.]+ images/sec, [\d.]+x the '
                   r'training rate: (not input-bound|training was '
                   r'input-bound)$', text, re.M)
  assert trained.record['summary']['input_only_images_per_sec'] > 0
  evaluated, text = run_quietly(
      model='lenet', data_dir=learnable_shards, eval=True,
      train_dir=train_dir, eval_batch_size=10, num_batches=3,
      num_warmup_batches=0)
  assert evaluated.status == 'ok', evaluated.failure
  assert evaluated.num_eval_examples == 30
  # Chance is 1/3.
  assert evaluated.top_1_accuracy >= 0.8, text


def test_input_only_measures_the_pipeline_alone(learnable_shards, tmp_path):
  out = run_cli('--model=resnet50', '--device=cpu', '--input_only',
                '--data_dir=%s' % learnable_shards, '--batch_size=8',
                '--num_batches=10', '--num_warmup_batches=2',
                '--result_dir=%s' % tmp_path)
  assert out.returncode == 0, out.stdout + out.stderr
  assert 'Mode:        input only' in out.stdout
  assert re.search(r'^total images/sec: [\d.]+$', out.stdout, re.M)
  (name,) = os.listdir(tmp_path)
  rec = json.loads((tmp_path / name).read_text())
  assert rec['config']['mode'] == 'input only'
  assert rec['summary']['images_per_sec'] > 0


def test_truncated_shard_fails_naming_the_file(learnable_shards, tmp_path):
  data = tmp_path / 'data'
  data.mkdir()
  for name in os.listdir(learnable_shards):
    content = open(os.path.join(learnable_shards, name), 'rb').read()
    if name.startswith('train-00001'):
      content = content[:len(content) * 2 // 3]
    (data / name).write_bytes(content)
  out = run_cli('--model=lenet', '--device=cpu', '--data_dir=%s' % data,
                '--batch_size=8', '--num_batches=40',
                '--result_dir=%s' % (tmp_path / 'runs'), timeout=300)
  assert out.returncode == exit_codes.RUN_FAILED, out.stdout + out.stderr
  assert 'Run failed:' in out.stdout
  assert 'train-00001-of-00003' in out.stdout


def test_missing_data_dir_is_reported_before_building(tmp_path):
  out = run_cli('--model=lenet', '--device=cpu',
                '--data_dir=%s' % (tmp_path / 'nowhere'), '--result_dir=')
  assert out.returncode == exit_codes.RUN_FAILED
  assert str(tmp_path / 'nowhere') in out.stdout


@pytest.mark.timeout(300)
def test_num_epochs_counts_the_real_datasets_examples(tmp_path):
  """--num_epochs on a dataset of unusual size: the run length and the
  printed epochs come from its 27 images, not from ImageNet's 1.28M."""
  from preprocessing import build_dataset  # pylint: disable=g-import-not-at-top
  from preprocessing import generated_data  # pylint: disable=g-import-not-at-top
  images, shards = str(tmp_path / 'images'), str(tmp_path / 'shards')
  generated_data.make_image_folder(images, num_classes=3, images_per_class=9,
                                   height=32, width=32)
  build_dataset.build(images, shards, num_train_shards=1,
                      num_validation_shards=1, validation_fraction=0.0,
                      log=lambda *a: None)
  result, text = run_quietly(model='trivial', data_dir=shards, num_batches=None,
                             num_epochs=2, batch_size=8, num_warmup_batches=0)
  assert result.status == 'ok', text
  steps = -(-2 * 27 // 8)  # 7: the epochs rounded up to whole steps
  assert 'Num batches: %d\n' % steps in text
  assert 'Num epochs:  %.2f\n' % (steps * 8 / 27) in text
  assert result.times.num_steps == steps
