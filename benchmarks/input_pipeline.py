"""Input-only throughput of the ImageNet train pipeline on this machine.

Builds a small generated dataset (ImageNet-sized JPEGs, 500x375) in a
temporary directory with the real builder, then times the ImageNet train
preprocessing (distorted crop, fused decode-and-crop, flip, resize) at the
model size with no model attached, and prints images/sec.

  python benchmarks/input_pipeline.py [--image_size 224 --batch_size 32
      --steps 30 --distortions --datasets_num_private_threads N
      --pipeline fast|checked|original_order|autotuned|both|A,B,...
      --rounds R]

Pipelines (same records, same preprocessing): fast is what runs; checked
carries every record's identity through the pipeline (as before issue
#17); original_order arranges the fast pipeline's stages as the original
tool did (records prefetched by one batch before the shuffle); autotuned
is the fast pipeline as it was before commit c5c83d0: Dataset.interleave
with AUTOTUNE parallel calls, tf.data's autotuner on.
Several (both = checked,fast) are timed in one process, alternating R
rounds of each so a busy machine disturbs all alike; the ratios of their
medians to the first one listed are printed.
"""

import argparse
import os
import statistics
import shutil
import sys
import tempfile
import types

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

import tensorflow as tf  # pylint: disable=g-import-not-at-top

from preprocessing import build_dataset
from preprocessing import dataset_options
from preprocessing import generated_data
from preprocessing import imagenet
from preprocessing import input_benchmark

PIPELINES = ('fast', 'checked', 'original_order', 'autotuned')


class _Rearranged(imagenet.ImageNetInput):
  """The fast pipeline's work in another arrangement; for comparison only.

  Subclasses say how records are read from the (shuffled) shard list and
  how the batches are finished.
  """

  # pylint: disable=protected-access
  def make_dataset(self):
    params = self._params
    seed = params.tf_random_seed
    files = tf.data.Dataset.from_tensor_slices(tf.constant(self._paths))
    if self.training:
      files = files.shuffle(len(self._paths), seed=seed)
    records = self.read(files, self.shard_log.reader(tf.data.TFRecordDataset))
    if self.training:
      records = records.shuffle(dataset_options.SHUFFLE_BUFFER, seed=seed)
    return self.finish(self._fast_batches(records.repeat()))


class OriginalOrderInput(_Rearranged):
  """The original tool's stage order: records prefetched by one batch
  before the shuffle."""

  def read(self, files, read_file):
    return dataset_options.interleave(
        files, read_file, self._params, len(self._paths),
        self.training).prefetch(self._batch_size)

  def finish(self, batches):
    return dataset_options.finish(batches, self._params)


class AutotunedInput(_Rearranged):
  """As it ran before: tf.data choosing the interleave's parallel calls,
  its autotuner on."""

  def read(self, files, read_file):
    return files.interleave(
        read_file, cycle_length=min(
            dataset_options.cycle_length(self._params), len(self._paths)),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

  def finish(self, batches):
    options = tf.data.Options()
    options.autotune.enabled = True
    return batches.prefetch(1).with_options(options)


# The arrangements other than ImageNetInput's own (fast and checked).
REARRANGED = {'original_order': OriginalOrderInput, 'autotuned': AutotunedInput}


def make_source(name, params, args):
  if name in REARRANGED:
    return REARRANGED[name](params, args.image_size, 1001, args.batch_size,
                            args.subset)
  return imagenet.ImageNetInput(params, args.image_size, 1001,
                                args.batch_size, args.subset,
                                checked=name == 'checked')


def pipeline_names(text):
  names = ['checked', 'fast'] if text == 'both' else text.split(',')
  unknown = [n for n in names if n not in PIPELINES]
  if unknown or len(set(names)) != len(names):
    raise argparse.ArgumentTypeError(
        '%r: give one or more of %s, comma-separated, or both'
        % (text, ', '.join(PIPELINES)))
  return names


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
  parser.add_argument('--pipeline', default=['fast'], type=pipeline_names,
                      help='fast (what runs), checked, original_order, '
                      'autotuned, both (= checked,fast) or a '
                      'comma-separated list')
  parser.add_argument('--rounds', type=int, default=1,
                      help='measurements of each pipeline (alternating)')
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
    pipelines = args.pipeline
    stats = {name: [] for name in pipelines}
    for _ in range(args.rounds):
      for name in pipelines:
        source = make_source(name, params, args)
        stats[name].append(input_benchmark.measure_input_throughput(
            source, warmup_steps=args.warmup_steps, steps=args.steps))
    print('ImageNet %s preprocessing, %dx%d, batch %d, %d steps after %d '
          'warm-up (fused decode-and-crop %s, distortions %s), %d CPU cores'
          % (args.subset, args.image_size, args.image_size, args.batch_size,
             args.steps, args.warmup_steps,
             'on' if params.fuse_decode_and_crop else 'off',
             'on' if args.distortions else 'off', os.cpu_count()))
    medians = {}
    for name in pipelines:
      runs = stats[name]
      times = sorted(t for run in runs for t in run['step_times'])
      medians[name] = (
          statistics.median(r['images_per_sec'] for r in runs),
          statistics.median(r['cpu_ms_per_image'] for r in runs))
      label = '' if len(pipelines) == 1 else '%s pipeline: ' % name
      print('%smedian step %.1f ms' % (label, 1000 * times[len(times) // 2]))
      print('%sCPU time per image %.2f ms (all threads)'
            % (label, medians[name][1]))
      # benchmarks/performance.py reads this line (of one pipeline).
      print('%sinput-only images/sec: %.1f' % (label, medians[name][0]))
    first = pipelines[0]
    for name in pipelines[1:]:
      print('%s / %s: %.2fx images/sec, %.2fx CPU time per image (medians '
            'of %d round%s)' % (
                name, first, medians[name][0] / medians[first][0],
                medians[name][1] / medians[first][1], args.rounds,
                '' if args.rounds == 1 else 's'))
  finally:
    shutil.rmtree(work, ignore_errors=True)
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
