"""ImageNet TFRecord shards -> per-tower batches (train or eval preprocessing).

Pipeline (tf.data, built inside the caller's tf.compat.v1 graph, on the
host CPU): shard list (shuffled per epoch for training) -> parallel
interleave of the shards (noting each shard opened) -> [cache] -> shuffle
(training) -> repeat -> parse + preprocess (parallel map, a batch per
tower in flight) -> batch per tower (drop remainder) -> label range and
JPEG signature check (one per batch) -> prefetch. Nothing per
element beyond the work itself: a failure names no file until
explain_data_error has the shards re-read by the checked reader (see
diagnosis and checked_reading).
"""

import functools
import itertools
import warnings

import tensorflow as tf

from preprocessing import base
from preprocessing import checked_reading
from preprocessing import codec
from preprocessing import dataset_options
from preprocessing import devices
from preprocessing import diagnosis
from preprocessing import errors
from preprocessing import image_ops
from preprocessing import imagenet_format as fmt
from preprocessing import shards

tf1 = tf.compat.v1

_tokens = itertools.count()


class ImageNetInput(base.InputSource):
  """Reads `<subset>-*-of-*` shards from params.data_dir.

  Images come out float32 NHWC in [-1, 1]; labels int32 as stored (1..1000
  for ImageNet, checked to be in [0, num_classes)). checked=True reads
  through checked_reading all the time (the benchmark's baseline).
  """

  synthetic = False
  description = 'imagenet'

  def __init__(self, params, image_size, num_classes, batch_size_per_tower,
               subset='train', checked=False):
    if subset not in fmt.SUBSETS:
      raise ValueError('subset must be one of %s, got %r'
                       % (fmt.SUBSETS, subset))
    resize_method = dataset_options.flag(params, 'resize_method', 'bilinear')
    image_ops.check_resize_method(resize_method)
    self._params = params
    self._size = _pair(image_size)
    self._num_classes = int(num_classes)
    self._batch_size = int(batch_size_per_tower)
    self._subset = subset
    self._resize_method = resize_method
    self._paths = shards.find_shards(params.data_dir, subset)
    self._sizes = [tf.io.gfile.stat(p).length for p in self._paths]
    self._num_examples = None
    self._initializer = None
    # checked: every record carries its identity through the pipeline (the
    # old way, ~15% more CPU per image); kept as the benchmark's baseline.
    self._checked = bool(checked)
    self._shard_log = diagnosis.ShardLog()
    self.token = 'imagenet_input_%d' % next(_tokens)
    self._good_record = self._check_first_record()
    diagnosis.register(self)

  @property
  def paths(self):
    return list(self._paths)

  @property
  def num_examples_per_epoch(self):
    if self._num_examples is None:
      self._num_examples = shards.count_examples(self._paths, self._subset)
    return self._num_examples

  @property
  def training(self):
    return self._subset == 'train'

  # -- graph ---------------------------------------------------------------

  def tower_batches(self, tower_devices):
    with tf1.device(devices.host_device(tower_devices)):
      with tf1.name_scope('imagenet_input'):
        pairs, self._initializer = devices.tower_batches(
            self.make_dataset(), tower_devices, self._params)
        return pairs

  def initializers(self):
    return [self._initializer] if self._initializer is not None else []

  def make_dataset(self):
    """Dataset of (images [batch, h, w, 3] float32, labels [batch] int32)."""
    params = self._params
    seed = getattr(params, 'tf_random_seed', None)
    if self._checked:
      files = tf.data.Dataset.from_tensor_slices(
          (tf.constant(self._paths), tf.constant(self._sizes, tf.int64)))
      read = checked_reading.read_shard
      # An end-of-shard marker repeated would leave nothing to read.
      is_record = lambda e: tf.not_equal(e['error'], errors.SKIP)
    else:
      files = tf.data.Dataset.from_tensor_slices(tf.constant(self._paths))
      # The per-shard side channel that tells a re-scan where to look.
      read = self._shard_log.reader(tf.data.TFRecordDataset)
      is_record = None
    if self.training:
      files = files.shuffle(len(self._paths), seed=seed)
    records = dataset_options.interleave(files, read, params,
                                         len(self._paths), self.training)
    records = dataset_options.repeat_cached_sample(records, params,
                                                   is_record=is_record)
    if dataset_options.flag(params, 'datasets_use_caching', False):
      records = records.cache()
    if self.training:
      records = records.shuffle(dataset_options.SHUFFLE_BUFFER, seed=seed)
    records = records.repeat()
    if self._checked:
      batches = checked_reading.map_checked(
          records, self._checked_preprocess(), self._batch_size,
          num_parallel_calls=dataset_options.map_parallel_calls(
              params, self._batch_size))
    else:
      batches = self._fast_batches(records)
    return dataset_options.finish(batches, params)

  def _fast_batches(self, records):
    """Parse + preprocess + batch with no per-element bookkeeping.

    A bad record fails its map (TensorFlow's error, naming no file), or
    the check of labels and JPEG signatures once per batch; either way explain_data_error
    has the record found by a re-scan (locate_bad_record).
    """
    if self._resize_method == 'round_robin':
      # The resize method cycles with the position in the stream.
      records = records.enumerate()
      preprocess = lambda position, record: self._preprocess(record, position)
    else:
      preprocess = lambda record: self._preprocess(record, 0)
    with warnings.catch_warnings():
      # Unseeded random ops take op seeds from the graph seed; intended.
      warnings.filterwarnings('ignore', message='Seed .* from outer graph')
      examples = records.map(preprocess, num_parallel_calls=(
          dataset_options.map_parallel_calls(self._params, self._batch_size)))
    batches = examples.batch(self._batch_size, drop_remainder=True)
    return batches.map(self._check_batch)

  def _preprocess(self, record, position):
    """Serialized example -> (image, label int64, is it a JPEG), unchecked.

    The JPEG signature is looked at because decode_jpeg also decodes PNG
    and GIF, which the checked reader refuses.
    """
    parsed = tf.io.parse_single_example(record, fmt.parse_spec())
    encoded = parsed[fmt.ENCODED]
    is_jpeg = _is_jpeg(encoded)
    return (self._image(parsed, encoded, position), parsed[fmt.LABEL],
            is_jpeg)

  def _check_batch(self, images, labels, is_jpeg):
    """Fails the batch when an image is not a JPEG or a label is outside
    [0, num_classes): one check per batch, not per element.

    The marker names this source instead of a record (index -1):
    explain_data_error has the record found.
    """
    bad_label = tf.logical_or(labels < 0, labels >= self._num_classes)
    bad = tf.logical_or(bad_label, tf.logical_not(is_jpeg))
    first = tf.argmax(tf.cast(bad, tf.int32), output_type=tf.int32)
    code = tf.where(is_jpeg[first], errors.BAD_LABEL, errors.NOT_JPEG)
    assertion = tf.debugging.Assert(
        tf.logical_not(tf.reduce_any(bad)),
        errors.marker_data(code, tf.constant(self.token),
                           tf.constant(-1, tf.int64), labels[first]))
    with tf.control_dependencies([assertion]):
      # Checked as int64, so a huge label cannot wrap into range.
      return tf.identity(images), tf.cast(labels, tf.int32)

  # -- the checked reader: up-front check, re-scans, benchmark baseline -----

  @property
  def shard_log(self):
    return self._shard_log

  def locate_bad_record(self, deadline):
    """Re-reads the shards, the most recently opened first (diagnosis).

    Returns (DataError or None, shards re-read, number of shards).
    """
    sizes = dict(zip(self._paths, self._sizes))
    order = [(p, sizes[p]) for p in self._shard_log.newest_first(self._paths)]
    found, read = checked_reading.rescan(order, self._checked_preprocess,
                                         self._good_record, deadline)
    return found, read, len(order)

  def _check_first_record(self):
    """Preprocesses one record now, in a private graph; returns it.

    A bad first record fails here with a DataError, before any graph is
    built; a good one guarantees every epoch yields at least one example,
    which the checked reader relies on (see checked_reading).
    """
    path, size = next((p, n) for p, n in zip(self._paths, self._sizes) if n)
    graph = tf.Graph()
    with graph.as_default():
      first = checked_reading.read_shard(path, size).take(1)
      iterator = tf1.data.make_initializable_iterator(first)
      element = iterator.get_next()
      (image, _), code, detail = self._checked_preprocess()(element)
      with tf1.Session(graph=graph) as sess:
        sess.run(iterator.initializer)
        record = b''
        try:
          _, record, code, detail = sess.run(
              [image, element['record'], code, detail])
        except tf.errors.OpError:
          code, detail = errors.UNDECODABLE, 0
    if code != errors.OK:
      raise errors.describe(code, path, 0, detail)
    return record

  def _checked_preprocess(self):
    """The map_checked fn, made in the current graph (see map_checked)."""
    # The stand-in JPEG is made once here and captured by the map function.
    return functools.partial(self._checked_one, stand_in_jpeg=_stand_in_jpeg())

  def _checked_one(self, element, stand_in_jpeg):
    """Identity dict -> ((image, label), error, detail); see map_checked."""
    parsed = tf.io.parse_single_example(element['record'], fmt.parse_spec())
    label = parsed[fmt.LABEL]
    encoded = parsed[fmt.ENCODED]
    error = element['error']
    is_jpeg = _is_jpeg(encoded)
    error = tf.where(tf.logical_and(tf.equal(error, errors.OK),
                                    tf.logical_not(is_jpeg)),
                     errors.NOT_JPEG, error)
    label_ok = tf.logical_and(label >= 0, label < self._num_classes)
    error = tf.where(tf.logical_and(tf.equal(error, errors.OK),
                                    tf.logical_not(label_ok)),
                     errors.BAD_LABEL, error)
    # A flagged element still goes through the same ops, on a tiny valid
    # JPEG, so that it reaches the check (a failing op would drop it).
    good = tf.equal(error, errors.OK)
    encoded = tf.where(good, encoded, stand_in_jpeg)
    # The element's number in the stream (map_checked's seq; the index in
    # its file for the up-front check) picks the round_robin resize method.
    position = element['seq'] if 'seq' in element else element['index']
    image = self._image(parsed, encoded, position)
    detail = tf.where(tf.equal(error, errors.BAD_LABEL), label, 0)
    label = tf.cast(tf.where(good, label, 0), tf.int32)
    return (image, label), error, detail

  def _image(self, parsed, encoded, position):
    """The train or eval preprocessing of one JPEG (both pipelines)."""
    ml_perf = dataset_options.flag(self._params, 'ml_perf', False)
    if self.training:
      boxes = image_ops.boxes_from_features(
          *[parsed[k].values for k in fmt.BBOX_KEYS])
      return image_ops.train_image(
          encoded, boxes, self._size, resize_method=self._resize_method,
          distortions=bool(getattr(self._params, 'distortions', False)),
          fuse_decode_and_crop=dataset_options.flag(
              self._params, 'fuse_decode_and_crop', True),
          position=position,
          distort_color_in_yiq=dataset_options.flag(
              self._params, 'distort_color_in_yiq', True), ml_perf=ml_perf)
    return image_ops.eval_image(encoded, self._size, self._resize_method,
                                position, ml_perf=ml_perf)


def _is_jpeg(encoded):
  return tf.equal(tf.strings.substr(encoded, 0, 3), codec.JPEG_SIGNATURE)


def _stand_in_jpeg():
  """A tiny valid JPEG that replaces the image of a flagged element."""
  return tf.io.encode_jpeg(tf.fill([8, 8, 3], tf.constant(128, tf.uint8)))


def _pair(size):
  if isinstance(size, (tuple, list)):
    return int(size[0]), int(size[1])
  return int(size), int(size)
