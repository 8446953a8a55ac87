"""build-dataset: folders of images -> ImageNet-format shards, read back."""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from preprocessing import build_dataset
from preprocessing import codec as codec_lib
from preprocessing import generated_data
from preprocessing import imagenet_format as fmt
from preprocessing import shards as shards_lib
from preprocessing.errors import DataError


def read_examples(paths):
  examples = []
  for path in paths:
    for record in tf.compat.v1.io.tf_record_iterator(path):
      examples.append(tf.train.Example.FromString(record))
  return examples


def feature(example, key):
  f = example.features.feature[key]
  kind = f.WhichOneof('kind')
  return list(getattr(f, kind).value)


def test_round_trip_every_key(image_folder, shards_dir):
  train = sorted(glob.glob(os.path.join(shards_dir, 'train-*')))
  validation = sorted(glob.glob(os.path.join(shards_dir, 'validation-*')))
  assert [os.path.basename(p) for p in train] == [
      'train-00000-of-00002', 'train-00001-of-00002']
  assert [os.path.basename(p) for p in validation] == [
      'validation-00000-of-00001']
  examples = read_examples(train + validation)
  assert len(examples) == 30
  classes = sorted(os.listdir(image_folder))
  seen = set()
  with codec_lib.ImageCodec() as codec:
    for ex in examples:
      assert set(ex.features.feature) == {
          fmt.ENCODED, fmt.FORMAT, fmt.FILENAME, fmt.HEIGHT, fmt.WIDTH,
          fmt.LABEL, fmt.SYNSET, fmt.TEXT} | set(fmt.BBOX_KEYS)
      label = feature(ex, fmt.LABEL)[0]
      synset = feature(ex, fmt.SYNSET)[0].decode()
      filename = feature(ex, fmt.FILENAME)[0].decode()
      # Class ids 1..K in sorted folder order; synset = folder name.
      assert label == classes.index(synset) + 1
      assert feature(ex, fmt.TEXT)[0].decode() == synset
      assert feature(ex, fmt.FORMAT) == [b'JPEG']
      assert feature(ex, fmt.HEIGHT) == [48] and feature(ex, fmt.WIDTH) == [64]
      # Whole-image box when none is known.
      assert [feature(ex, k) for k in fmt.BBOX_KEYS] == [[0.0], [0.0], [1.0],
                                                         [1.0]]
      encoded = feature(ex, fmt.ENCODED)[0]
      with open(os.path.join(image_folder, synset, filename), 'rb') as f:
        assert encoded == f.read()  # JPEGs stored byte for byte
      assert codec.decode(encoded).shape == (48, 64, 3)
      seen.add((synset, filename))
  assert len(seen) == 30  # every image exactly once
  assert shards_lib.count_examples(train, 'train') == 24
  # No temporary files left behind.
  assert sorted(os.listdir(shards_dir)) == sorted(
      os.path.basename(p) for p in train + validation)


def test_validation_split_is_per_class(shards_dir):
  paths = glob.glob(os.path.join(shards_dir, 'validation-*'))
  labels = sorted(feature(ex, fmt.LABEL)[0] for ex in read_examples(paths))
  assert labels == [1, 1, 2, 2, 3, 3]


def test_cli_with_labels_file_and_png(tmp_path):
  root = tmp_path / 'in'
  generated_data.make_image_folder(str(root), num_classes=2,
                                   images_per_class=2, height=16, width=20)
  # A PNG is converted to JPEG on the way in.
  with codec_lib.ImageCodec() as codec:
    pixels = codec.decode(open(root / 'n00000001' / 'img_0000.jpg',
                               'rb').read())
  png = tf.io.encode_png(pixels).numpy()
  (root / 'n00000001' / 'extra.png').write_bytes(png)
  labels = tmp_path / 'labels.txt'
  # Reverse order and descriptions: the file, not sorting, decides ids.
  labels.write_text('n00000001\tsecond thing\nn00000000\tfirst thing\n')
  out = tmp_path / 'out'
  code = build_dataset.main([
      'tf_cnn_benchmarks build-dataset', '--input_dir', str(root),
      '--output_dir', str(out), '--num_train_shards', '3',
      '--validation_fraction', '0', '--labels_file', str(labels)])
  assert code == 0
  paths = sorted(glob.glob(str(out / 'train-*-of-00003')))
  assert len(paths) == 3 and not glob.glob(str(out / 'validation-*'))
  examples = read_examples(paths)
  assert len(examples) == 5
  by_name = {(feature(e, fmt.SYNSET)[0], feature(e, fmt.FILENAME)[0]): e
             for e in examples}
  png_example = by_name[(b'n00000001', b'extra.png')]
  assert feature(png_example, fmt.LABEL) == [1]
  assert feature(png_example, fmt.TEXT) == [b'second thing']
  assert codec_lib.is_jpeg(feature(png_example, fmt.ENCODED)[0])
  assert feature(by_name[(b'n00000000', b'img_0000.jpg')], fmt.LABEL) == [2]


def test_cli_errors(tmp_path, capsys):
  assert build_dataset.main(['build-dataset']) == 2
  assert build_dataset.main(['build-dataset', '--input_dir',
                             str(tmp_path / 'nope'), '--output_dir',
                             str(tmp_path / 'out')]) == 1
  assert 'nope' in capsys.readouterr().err
  bad = tmp_path / 'in' / 'cls'
  bad.mkdir(parents=True)
  (bad / 'broken.jpg').write_bytes(b'\xff\xd8\xff\xe0 not really a jpeg')
  with pytest.raises(DataError, match='broken.jpg'):
    build_dataset.build(str(tmp_path / 'in'), str(tmp_path / 'out'),
                        log=lambda *a: None)


def test_learnable_images_differ_by_class():
  rng = np.random.RandomState(0)
  means = [generated_data.class_image(rng, k, 3, 16, 16).mean(axis=(0, 1))
           for k in range(3)]
  # Each class's dominant channel differs.
  assert len({int(np.argmax(m)) for m in means}) == 3
