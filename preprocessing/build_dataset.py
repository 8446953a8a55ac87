"""`tf_cnn_benchmarks build-dataset`: a folder of images -> ImageNet shards;
with --generate, a learnable generated dataset instead (shapes_data.py), in
the ImageNet or the CIFAR-10 format.

Input: one sub-folder per class (its name is the synset), e.g.
  INPUT/n01440764/img1.jpg ...
or the same split already made: INPUT/train/<class>/..., INPUT/validation/...
Class ids are 1..K in sorted folder order (or the order of --labels_file);
0 stays the background class, as in ImageNet's 1001-way heads.

Every image is decoded once (a corrupt file stops the build with its name);
JPEGs are stored byte for byte, other formats re-encoded as JPEG. Each
example gets the whole image as its bounding box, since none is known.
Shards are written under a temporary name and renamed when complete, so a
reader never sees a half-written shard.
"""

import argparse
import collections
import os
import random
import sys

import tensorflow as tf

from preprocessing import codec as codec_lib
from preprocessing import imagenet_format as fmt
from preprocessing import shapes_data
from preprocessing.errors import DataError

IMAGE_EXTENSIONS = ('.jpg', '.jpeg', '.png', '.gif', '.bmp')

# One image to write: its file, class id and class names.
ImageEntry = collections.namedtuple('ImageEntry',
                                    ['path', 'label', 'synset', 'text'])


def read_labels_file(path):
  """[(synset, text)] in label order from 'synset[<TAB>text]' lines."""
  classes = []
  with open(path, encoding='utf-8') as f:
    for line in f:
      line = line.rstrip('\n')
      if not line.strip():
        continue
      synset, _, text = line.partition('\t')
      synset = synset.strip()
      classes.append((synset, text.strip() or synset))
  if not classes:
    raise DataError('Labels file %s lists no classes; write one class '
                    'folder name per line.' % path, path=path)
  return classes


def list_classes(class_root, labels=None):
  """[ImageEntry] for every image under class_root/<class>/."""
  if not os.path.isdir(class_root):
    raise DataError('Input directory %s does not exist.' % class_root,
                    path=class_root)
  folders = sorted(d for d in os.listdir(class_root)
                   if os.path.isdir(os.path.join(class_root, d)))
  if labels is None:
    labels = [(d, d) for d in folders]
  ids = {synset: (i + 1, text) for i, (synset, text) in enumerate(labels)}
  unknown = [d for d in folders if d not in ids]
  if unknown:
    raise DataError('Class folders %s under %s are not in the labels file; '
                    'add them or remove the folders.'
                    % (', '.join(unknown[:5]), class_root), path=class_root)
  entries = []
  for folder in folders:
    label, text = ids[folder]
    directory = os.path.join(class_root, folder)
    for name in sorted(os.listdir(directory)):
      if name.lower().endswith(IMAGE_EXTENSIONS):
        entries.append(ImageEntry(os.path.join(directory, name), label,
                                  folder, text))
  if not entries:
    raise DataError('No images (%s) in class folders under %s.'
                    % (', '.join(IMAGE_EXTENSIONS), class_root),
                    path=class_root)
  return entries


def split_entries(entries, validation_fraction, seed=0):
  """(train, validation): the fraction of each class held out, at random."""
  by_class = collections.defaultdict(list)
  for entry in entries:
    by_class[entry.label].append(entry)
  rng = random.Random(seed)
  train, validation = [], []
  for label in sorted(by_class):
    items = list(by_class[label])
    rng.shuffle(items)
    held = int(round(len(items) * validation_fraction))
    validation += items[:held]
    train += items[held:]
  return train, validation


def _example_for(entry, codec):
  with open(entry.path, 'rb') as f:
    data = f.read()
  try:
    pixels = codec.decode(data)
  except tf.errors.OpError as e:
    raise DataError('Cannot decode image %s (%s). Remove or replace the '
                    'file and run build-dataset again.'
                    % (entry.path, e.message.strip().splitlines()[-1]),
                    path=entry.path) from None
  if not codec_lib.is_jpeg(data):
    data = codec.encode_jpeg(pixels)
  height, width = pixels.shape[:2]
  return fmt.make_example(data, entry.label, height, width,
                          filename=os.path.basename(entry.path),
                          synset=entry.synset, text=entry.text)


def write_records(path, examples):
  """Writes serialized examples (or raw bytes) to path, atomically."""
  directory, name = os.path.split(path)
  temp = os.path.join(directory, '.%s.tmp-%d' % (name, os.getpid()))
  try:
    with tf.io.TFRecordWriter(temp) as writer:
      for example in examples:
        writer.write(example if isinstance(example, bytes)
                     else example.SerializeToString())
    os.replace(temp, path)
  finally:
    if os.path.exists(temp):
      os.remove(temp)
  return path


def write_imagenet_shards(entries, output_dir, subset, num_shards, seed=0,
                          codec=None):
  """Writes entries as `<subset>-NNNNN-of-MMMMM` shards; returns the paths.

  Entries are shuffled (seeded) so each shard mixes classes, then split
  into num_shards near-equal runs (fewer shards when there are fewer
  images). An existing shard of the same name is replaced.
  """
  entries = list(entries)
  rng = random.Random(seed)
  rng.shuffle(entries)
  num_shards = max(1, min(int(num_shards), len(entries)))
  os.makedirs(output_dir, exist_ok=True)
  own_codec = codec is None
  codec = codec or codec_lib.ImageCodec()
  paths = []
  try:
    for i in range(num_shards):
      chunk = entries[len(entries) * i // num_shards:
                      len(entries) * (i + 1) // num_shards]
      path = os.path.join(output_dir, fmt.shard_name(subset, i, num_shards))
      write_records(path, (_example_for(e, codec) for e in chunk))
      paths.append(path)
  finally:
    if own_codec:
      codec.close()
  return paths


def write_generated_imagenet(output_dir, num_classes=10, train_per_class=100,
                             validation_per_class=20, height=64, width=64,
                             seed=0, noise=shapes_data.DEFAULT_NOISE,
                             num_train_shards=4, num_validation_shards=1):
  """ImageNet-format shards of generated images (shapes_data.py);
  {subset: [paths]}. Labels 1..num_classes (0 stays background, as
  ImageNet's); synsets 's0000', ...; texts the class names ('checks
  disc'); each record's box the shape's box."""
  shapes_data.check_num_classes(num_classes)
  os.makedirs(output_dir, exist_ok=True)
  written = {}
  with codec_lib.ImageCodec() as codec:
    for subset, per_class, shards in (
        ('train', train_per_class, num_train_shards),
        ('validation', validation_per_class, num_validation_shards)):
      if per_class <= 0:
        continue
      rng, labels = shapes_data.subset_labels(subset, num_classes, per_class,
                                              seed)
      numbered = list(enumerate(labels))
      shards = max(1, min(int(shards), len(numbered)))

      def examples(chunk, rng=rng, subset=subset):
        # Drawn in order, shard after shard: the same seed gives the same
        # images whatever the shard count.
        for index, label in chunk:
          pixels, box = shapes_data.render(rng, int(label), height, width,
                                           noise)
          yield fmt.make_example(
              codec.encode_jpeg(pixels), int(label) + 1, height, width,
              filename='%s_%06d.jpg' % (subset, index),
              synset='s%04d' % label,
              text=shapes_data.class_name(int(label)), boxes=(box,))
      written[subset] = [
          write_records(os.path.join(output_dir,
                                     fmt.shard_name(subset, i, shards)),
                        examples(numbered[len(numbered) * i // shards:
                                          len(numbered) * (i + 1) // shards]))
          for i in range(shards)]
  return written


def build(input_dir, output_dir, num_train_shards=1024,
          num_validation_shards=128, validation_fraction=0.1,
          labels_file=None, seed=0, log=print):
  """Builds train (and validation) shards; returns {subset: [paths]}."""
  labels = read_labels_file(labels_file) if labels_file else None
  pre_split = all(os.path.isdir(os.path.join(input_dir, s))
                  for s in fmt.SUBSETS)
  if pre_split:
    train = list_classes(os.path.join(input_dir, 'train'), labels)
    validation = list_classes(os.path.join(input_dir, 'validation'), labels)
  else:
    train, validation = split_entries(list_classes(input_dir, labels),
                                      validation_fraction, seed)
  written = {}
  with codec_lib.ImageCodec() as codec:
    for subset, entries, shards in (('train', train, num_train_shards),
                                    ('validation', validation,
                                     num_validation_shards)):
      if not entries:
        continue
      written[subset] = write_imagenet_shards(entries, output_dir, subset,
                                              shards, seed=seed, codec=codec)
      log('%s: %d images from %d classes in %d shards'
          % (subset, len(entries), len({e.label for e in entries}),
             len(written[subset])))
  return written


def _parser(prog):
  parser = argparse.ArgumentParser(
      prog=prog, description='Turn a folder of images (one sub-folder per '
      'class) into ImageNet-format TFRecord shards for --data_dir; or, with '
      '--generate, write a learnable generated dataset (shapes in textures, '
      'seeded, offline) in the ImageNet or CIFAR-10 format.')
  parser.add_argument('--input_dir', default=None,
                      help='INPUT/<class>/*.jpg, or INPUT/{train,validation}/'
                      '<class>/*.jpg when already split.')
  parser.add_argument('--output_dir', required=True)
  parser.add_argument('--num_train_shards', type=int, default=None,
                      help='At most this many (never more than images). '
                      'Default 1024, or 4 with --generate.')
  parser.add_argument('--num_validation_shards', type=int, default=None,
                      help='Default 128, or 1 with --generate.')
  parser.add_argument('--validation_fraction', type=float, default=0.1,
                      help='Share of each class held out for validation '
                      'when the input is not already split.')
  parser.add_argument('--labels_file', default=None,
                      help='Class folder names in label order (1..K), one '
                      'per line, optionally "name<TAB>description".')
  parser.add_argument('--seed', type=int, default=0)
  generated = parser.add_argument_group(
      'generated data (--generate; no --input_dir)')
  generated.add_argument('--generate', action='store_true',
                         help='Write generated images whose class (a shape '
                         'and its texture) is in the pixels, under random '
                         'colours, position, size, shading and noise.')
  generated.add_argument('--format', choices=('imagenet', 'cifar10'),
                         default='imagenet',
                         help='imagenet: TFRecord shards (--data_name='
                         'imagenet); cifar10: python-version batches, 32x32, '
                         '10 classes (--data_name=cifar10).')
  generated.add_argument('--num_classes', type=int, default=10,
                         help='2..%d (cifar10: 10).' % shapes_data.MAX_CLASSES)
  generated.add_argument('--image_size', default='64',
                         help='N or HxW pixels of the imagenet format '
                         '(cifar10 is 32x32).')
  generated.add_argument('--train_images_per_class', type=int, default=None,
                         help='Default 100 (imagenet), 500 (cifar10).')
  generated.add_argument('--validation_images_per_class', type=int,
                         default=None,
                         help='Default 20 (imagenet), 100 (cifar10).')
  generated.add_argument('--noise', type=float,
                         default=shapes_data.DEFAULT_NOISE,
                         help='Pixel noise standard deviation as a fraction '
                         'of the 0..255 range.')
  return parser


def _usage(message):
  print('build-dataset: %s' % message, file=sys.stderr)
  return 2


def _image_size(text):
  """(height, width) of 'N' or 'HxW'; None when malformed."""
  parts = text.lower().split('x')
  try:
    sizes = [int(p) for p in parts]
  except ValueError:
    return None
  if len(sizes) == 1:
    sizes *= 2
  if len(sizes) != 2 or min(sizes) < 8:
    return None
  return tuple(sizes)


def _generate(args, log=print):
  """--generate: the checks of its arguments (2 on a bad one), then the
  dataset; returns the exit code."""
  if args.input_dir or args.labels_file:
    return _usage('--generate makes its own images; drop --input_dir and '
                  '--labels_file (or drop --generate to build from them).')
  cifar = args.format == 'cifar10'
  train = args.train_images_per_class
  validation = args.validation_images_per_class
  train = (500 if cifar else 100) if train is None else train
  validation = (100 if cifar else 20) if validation is None else validation
  if train < 1 or validation < 0:
    return _usage('--train_images_per_class must be at least 1 and '
                  '--validation_images_per_class at least 0.')
  if not 0.0 <= args.noise <= 1.0:
    return _usage('--noise is a fraction of the pixel range, in [0, 1].')
  if cifar:
    if args.num_classes != 10:
      return _usage('--format=cifar10 has 10 classes, as CIFAR-10 (the '
                    'cifar10 models have 10-way heads); drop --num_classes '
                    'or use --format=imagenet for %d.' % args.num_classes)
    if train % shapes_data.CIFAR_TRAIN_BATCHES:
      return _usage('--format=cifar10 splits training into %d batches; '
                    'give --train_images_per_class as a multiple of 5.'
                    % shapes_data.CIFAR_TRAIN_BATCHES)
    shapes_data.write_cifar10(args.output_dir, train, validation,
                              seed=args.seed, noise=args.noise)
    log('cifar10 format: %d train and %d validation images (32x32, 10 '
        'classes) in %s' % (10 * train, 10 * validation, args.output_dir))
    return 0
  if not 2 <= args.num_classes <= shapes_data.MAX_CLASSES:
    return _usage('--num_classes=%d: the generated classes are 2..%d '
                  '(%d shapes x %d textures).' % (
                      args.num_classes, shapes_data.MAX_CLASSES,
                      len(shapes_data.SHAPES), len(shapes_data.TEXTURES)))
  size = _image_size(args.image_size)
  if size is None:
    return _usage('--image_size=%s: give N or HxW, at least 8 pixels each '
                  '(e.g. 64 or 96x128).' % args.image_size)
  written = write_generated_imagenet(
      args.output_dir, args.num_classes, train, validation, size[0], size[1],
      seed=args.seed, noise=args.noise,
      num_train_shards=args.num_train_shards or 4,
      num_validation_shards=args.num_validation_shards or 1)
  for subset, paths in sorted(written.items()):
    log('%s: %d images from %d classes (%dx%d) in %d shards' % (
        subset, args.num_classes * (train if subset == 'train'
                                    else validation),
        args.num_classes, size[0], size[1], len(paths)))
  return 0


def main(argv):
  """Entry point; returns the process exit code (0 ok, 1 bad data, 2 usage)."""
  argv = list(argv)
  try:
    args = _parser(argv[0] if argv else 'build-dataset').parse_args(argv[1:])
  except SystemExit as e:
    return 0 if e.code == 0 else 2
  for name in ('num_train_shards', 'num_validation_shards'):
    if getattr(args, name) is not None and getattr(args, name) < 1:
      return _usage('Shard counts must be at least 1.')
  if args.generate:
    return _generate(args)
  if not args.input_dir:
    return _usage('give --input_dir (a folder of class folders), or '
                  '--generate for a generated dataset.')
  if not 0.0 <= args.validation_fraction < 1.0:
    return _usage('--validation_fraction must be in [0, 1).')
  try:
    build(args.input_dir, args.output_dir, args.num_train_shards or 1024,
          args.num_validation_shards or 128, args.validation_fraction,
          args.labels_file, args.seed)
  except DataError as e:
    print('build-dataset: %s' % e, file=sys.stderr)
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
