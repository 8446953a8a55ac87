"""Input-only throughput of the ImageNet train pipeline on this machine.

Builds a small generated dataset (ImageNet-sized JPEGs, 500x375) in a
temporary directory with the real builder, then times the ImageNet train
preprocessing (distorted crop, fused decode-and-crop, flip, resize) at the
model size with no model attached, and prints images/sec.

  python benchmarks/input_pipeline.py [--image_size 224 --batch_size 32
      --steps 30 --distortions --datasets_num_private_threads N]
"""

import argparse
import os
import shutil
import sys
import tempfile
import types

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from preprocessing import build_dataset  # pylint: disable=g-import-not-at-top
from preprocessing import generated_data
from preprocessing import get_input_source
from preprocessing import input_benchmark


def _args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--image_size', type=int, default=224)
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--steps', type=int, default=30)
  parser.add_argument('--warmup_steps', type=int, default=10)
  parser.add_argument('--num_classes', type=int, default=4)
  parser.add_argument('--images_per_class', type=int, default=64)
  parser.add_argument('--distortions', action='store_true')
  parser.add_argument('--resize_method', default='bilinear')
  parser.add_argument('--no_fuse_decode_and_crop', action='store_true')
  parser.add_argument('--datasets_num_private_threads', type=int,
                      default=None)
  parser.add_argument('--subset', default='train',
                      choices=['train', 'validation'])
  return parser.parse_args(argv)


def main(argv):
  args = _args(argv)
  work = tempfile.mkdtemp(prefix='input_pipeline_bench_')
  try:
    images = os.path.join(work, 'images')
    shards = os.path.join(work, 'shards')
    generated_data.make_image_folder(
        images, num_classes=args.num_classes,
        images_per_class=args.images_per_class, height=375, width=500)
    # Validation gets a quarter so either subset can be timed.
    build_dataset.build(images, shards, num_train_shards=8,
                        num_validation_shards=2, validation_fraction=0.25,
                        log=lambda *a: None)
    params = types.SimpleNamespace(
        data_dir=shards, data_name='imagenet', distortions=args.distortions,
        resize_method=args.resize_method,
        fuse_decode_and_crop=not args.no_fuse_decode_and_crop,
        datasets_num_private_threads=args.datasets_num_private_threads,
        datasets_use_prefetch=True, datasets_prefetch_buffer_size=1,
        datasets_use_caching=False,
        datasets_parallel_interleave_cycle_length=None, tf_random_seed=1234)
    source = get_input_source(params, args.image_size, 1001, args.batch_size,
                              1, args.subset)
    stats = input_benchmark.measure_input_throughput(
        source, warmup_steps=args.warmup_steps, steps=args.steps)
    times = sorted(stats['step_times'])
    print('ImageNet %s preprocessing, %dx%d, batch %d, %d steps after %d '
          'warm-up (fused decode-and-crop %s, distortions %s), %d CPU cores'
          % (args.subset, args.image_size, args.image_size, args.batch_size,
             args.steps, args.warmup_steps,
             'on' if params.fuse_decode_and_crop else 'off',
             'on' if args.distortions else 'off', os.cpu_count()))
    print('median step %.1f ms' % (1000 * times[len(times) // 2]))
    print('CPU time per image %.2f ms (all threads)' % stats['cpu_ms_per_image'])
    print('input-only images/sec: %.1f' % stats['images_per_sec'])
  finally:
    shutil.rmtree(work, ignore_errors=True)
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
