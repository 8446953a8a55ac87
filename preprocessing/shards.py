"""Finding and counting TFRecord shards on disk (plain Python, no graph)."""

import glob
import os
import struct

from preprocessing import imagenet_format
from preprocessing.errors import DataError


def find_shards(data_dir, subset):
  """Sorted shard paths of a subset; DataError when there are none."""
  if not data_dir or not os.path.isdir(data_dir):
    raise DataError(
        'Data directory %r does not exist or is not a directory. Pass '
        '--data_dir pointing at the ImageNet TFRecord shards (%s), or build '
        'them with `tf_cnn_benchmarks build-dataset`; leave --data_dir unset '
        'for synthetic data.' % (data_dir, imagenet_format.shard_glob(subset)),
        path=data_dir)
  pattern = os.path.join(data_dir, imagenet_format.shard_glob(subset))
  paths = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
  if not paths:
    present = sorted(os.listdir(data_dir))[:5]
    raise DataError(
        'No %s shards in %s: nothing matches %s (the directory holds %s). '
        'Shards must be named like %s; build them with `tf_cnn_benchmarks '
        'build-dataset`, or check --data_dir and --data_name.'
        % (subset, data_dir, imagenet_format.shard_glob(subset),
           ', '.join(present) + (', ...' if len(present) == 5 else '')
           if present else 'no files',
           imagenet_format.shard_name(subset, 0, 1024)),
        path=data_dir)
  if all(os.path.getsize(p) == 0 for p in paths):
    raise DataError(
        'All %d %s shards in %s are empty files. Rebuild them with '
        '`tf_cnn_benchmarks build-dataset`.' % (len(paths), subset, data_dir),
        path=data_dir)
  return paths


def count_records(path):
  """Records in one TFRecord file, by walking the length headers only.

  Reads 8 bytes per record, no checksums: a damaged file is counted as far
  as its headers go (the reader reports the damage precisely).
  """
  count = 0
  size = os.path.getsize(path)
  with open(path, 'rb') as f:
    offset = 0
    while offset + 8 <= size:
      f.seek(offset)
      (length,) = struct.unpack('<Q', f.read(8))
      offset += length + 16
      if offset > size:
        break
      count += 1
  return count


def count_examples(paths, subset):
  """Examples in the shards; the published count for full ImageNet sets."""
  names = [os.path.basename(p) for p in paths]
  full = imagenet_format.FULL_IMAGENET_SHARDS[subset]
  expected = [imagenet_format.shard_name(subset, i, full) for i in range(full)]
  if names == expected:
    # Walking 1.3M headers over a network disk can take minutes; the
    # standard shard set has a well-known size.
    return imagenet_format.FULL_IMAGENET_EXAMPLES[subset]
  return sum(count_records(p) for p in paths)
