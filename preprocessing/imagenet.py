"""ImageNet TFRecord shards -> per-tower batches (train or eval preprocessing).

Pipeline (tf.data, built inside the caller's tf.compat.v1 graph, on the
host CPU): shard list (shuffled per epoch for training) -> parallel
interleave of the shards -> [cache] -> shuffle (training) -> repeat ->
parse + JPEG and label checks + preprocess (parallel map) -> batch per
tower (drop remainder) -> check that names a failing file -> prefetch. See checked_reading for how read errors keep their file name.
"""

import functools

import tensorflow as tf

from preprocessing import base
from preprocessing import checked_reading
from preprocessing import dataset_options
from preprocessing import devices
from preprocessing import errors
from preprocessing import image_ops
from preprocessing import imagenet_format as fmt
from preprocessing import shards

tf1 = tf.compat.v1


class ImageNetInput(base.InputSource):
  """Reads `<subset>-*-of-*` shards from params.data_dir.

  Images come out float32 NHWC in [-1, 1]; labels int32 as stored (1..1000
  for ImageNet, checked to be in [0, num_classes)).
  """

  synthetic = False
  description = 'imagenet'

  def __init__(self, params, image_size, num_classes, batch_size_per_tower,
               subset='train'):
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
    self._check_first_record()

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
    files = tf.data.Dataset.from_tensor_slices(
        (tf.constant(self._paths), tf.constant(self._sizes, tf.int64)))
    if self.training:
      files = files.shuffle(len(self._paths), seed=seed)
    records = dataset_options.interleave(
        files, checked_reading.read_shard, params, len(self._paths),
        self.training)
    records = dataset_options.repeat_cached_sample(
        records, params,
        # An end-of-shard marker repeated would leave nothing to read.
        is_record=lambda e: tf.not_equal(e['error'], errors.SKIP))
    if dataset_options.flag(params, 'datasets_use_caching', False):
      records = records.cache()
    if self.training:
      records = records.shuffle(dataset_options.SHUFFLE_BUFFER, seed=seed)
    # The stand-in JPEG is made once here and captured by the map function.
    preprocess = functools.partial(self._preprocess,
                                   stand_in_jpeg=_stand_in_jpeg())
    batches = checked_reading.map_checked(
        records.repeat(), preprocess, self._batch_size,
        num_parallel_calls=tf.data.AUTOTUNE)
    return dataset_options.finish(batches, params)

  def _check_first_record(self):
    """Preprocesses one record now, in a private graph.

    A bad first record fails here with a DataError, before any graph is
    built; a good one guarantees every epoch yields at least one example,
    which the read-time checks rely on (see checked_reading).
    """
    path, size = next((p, n) for p, n in zip(self._paths, self._sizes) if n)
    graph = tf.Graph()
    with graph.as_default():
      first = checked_reading.read_shard(path, size).take(1).map(
          functools.partial(self._preprocess, stand_in_jpeg=_stand_in_jpeg()))
      iterator = tf1.data.make_initializable_iterator(first)
      (image, _), code, detail = iterator.get_next()
      with tf1.Session(graph=graph) as sess:
        sess.run(iterator.initializer)
        try:
          _, code, detail = sess.run([image, code, detail])
        except tf.errors.OpError:
          code, detail = errors.UNDECODABLE, 0
    if code != errors.OK:
      raise errors.describe(code, path, 0, detail)

  def _preprocess(self, element, stand_in_jpeg):
    """Identity dict -> ((image, label), error, detail); see map_checked."""
    parsed = tf.io.parse_single_example(element['record'], fmt.parse_spec())
    label = parsed[fmt.LABEL]
    encoded = parsed[fmt.ENCODED]
    error = element['error']
    is_jpeg = tf.equal(tf.strings.substr(encoded, 0, 3), b'\xff\xd8\xff')
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
    if self.training:
      boxes = image_ops.boxes_from_features(
          *[parsed[k].values for k in fmt.BBOX_KEYS])
      image = image_ops.train_image(
          encoded, boxes, self._size, resize_method=self._resize_method,
          distortions=bool(getattr(self._params, 'distortions', False)),
          fuse_decode_and_crop=dataset_options.flag(
              self._params, 'fuse_decode_and_crop', True),
          position=position,
          distort_color_in_yiq=dataset_options.flag(
              self._params, 'distort_color_in_yiq', True))
    else:
      image = image_ops.eval_image(encoded, self._size, self._resize_method,
                                   position)
    detail = tf.where(tf.equal(error, errors.BAD_LABEL), label, 0)
    label = tf.cast(tf.where(good, label, 0), tf.int32)
    return (image, label), error, detail


def _stand_in_jpeg():
  """A tiny valid JPEG that replaces the image of a flagged element."""
  return tf.io.encode_jpeg(tf.fill([8, 8, 3], tf.constant(128, tf.uint8)))


def _pair(size):
  if isinstance(size, (tuple, list)):
    return int(size[0]), int(size[1])
  return int(size), int(size)
