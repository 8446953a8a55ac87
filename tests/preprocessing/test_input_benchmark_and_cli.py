"""Input-only throughput measurement, and build-dataset through the CLI."""

import glob
import os

from preprocessing import get_input_source
from preprocessing import input_benchmark
from tests.preprocessing.conftest import make_params
from tf_cnn_benchmarks import cli


def test_measure_input_throughput_on_real_shards(shards_dir):
  source = get_input_source(make_params(shards_dir), 32, 4, 4, 1, 'train')
  stats = input_benchmark.measure_input_throughput(
      source, tower_devices=['/cpu:0'], warmup_steps=2, steps=3)
  assert stats['images_per_step'] == 4
  assert len(stats['step_times']) == 3
  assert stats['images_per_sec'] > 0 and stats['cpu_ms_per_image'] >= 0


def test_build_dataset_via_the_tool_command(image_folder, tmp_path):
  out = str(tmp_path / 'shards')
  code = cli.main(['tf_cnn_benchmarks', 'build-dataset', '--input_dir',
                   image_folder, '--output_dir', out, '--num_train_shards',
                   '2', '--num_validation_shards', '2'])
  assert code == 0
  names = sorted(os.path.basename(p) for p in glob.glob(out + '/*'))
  assert names == ['train-00000-of-00002', 'train-00001-of-00002',
                   'validation-00000-of-00002', 'validation-00001-of-00002']
