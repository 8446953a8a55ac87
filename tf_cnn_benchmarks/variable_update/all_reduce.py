"""In-graph all-reduce of tower gradients, tuned by the original's flags.

``batch_mean`` turns every tower's gradients into their mean on every tower:
  1. per tower (--gradient_repacking=N): all gradients concatenated and cut
     into N chunks, so N reductions run instead of one per variable;
     (--compact_gradient_transfer with --use_fp16): cast to the compute
     dtype for the transfer; (--variable_consistency=relaxed): the previous
     step's value is sent (see Deferred);
  2. (--agg_small_grads_max_bytes/_group): runs of consecutive small
     tensors concatenated into one, reduced together, then split;
  3. each tensor reduced by the --all_reduce_spec algorithm of its size
     range (or by --hierarchical_copy's two-level copies),
     --allreduce_merge_scope tensors per 'allreduce' name scope;
  4. step 1 and 2 undone on every tower.
None of it changes the math beyond float rounding; it changes which ops
(and transfers) the graph has.
"""

import dataclasses
from typing import Optional, Sequence

import tensorflow as tf

from tf_cnn_benchmarks.variable_update import all_reduce_spec
from tf_cnn_benchmarks.variable_update import base

tf1 = tf.compat.v1


@dataclasses.dataclass(frozen=True)
class Options:
  ranges: Sequence[all_reduce_spec.Range]
  repack_chunks: int = 0
  transfer_dtype: Optional[tf.DType] = None  # None: as computed
  defer: bool = False
  agg_max_bytes: int = 0
  agg_max_group: int = 10
  merge_scope: int = 1
  # --gpu_indices: the towers' order around xring's ring (() : their own).
  ring_order: Sequence[int] = ()
  # --hierarchical_copy's --network_topology, or None (the spec's ranges).
  hierarchical: Optional[str] = None


def options_from(params, compute_dtype):
  compact = (params.use_fp16 and params.compact_gradient_transfer and
             compute_dtype != tf.float32)
  return Options(
      ranges=all_reduce_spec.parse(params.all_reduce_spec or
                                   all_reduce_spec.SPREAD),
      repack_chunks=params.gradient_repacking,
      transfer_dtype=compute_dtype if compact else None,
      defer=params.variable_consistency == 'relaxed',
      agg_max_bytes=params.agg_small_grads_max_bytes,
      agg_max_group=params.agg_small_grads_max_group,
      merge_scope=max(params.allreduce_merge_scope, 1),
      ring_order=tuple(all_reduce_spec.ring_order(params.gpu_indices,
                                                  params.num_gpus)),
      hierarchical=(params.network_topology if params.hierarchical_copy
                    else None))


class Deferred:
  """Hands out the value a tensor had at the previous step (zeros at the
  first), as the original's relaxed consistency does with gradients.

  The previous value lives in a local variable (so every process initialises
  its own, and nothing has to be "warmed up" before the first step): each
  step reads it, then stores the new value; the returned tensor waits for
  the store, so running it always runs both.
  """

  def __init__(self):
    self.count = 0

  def __call__(self, tensor):
    with tf1.device(tensor.device), tf.name_scope('deferred'):
      held = tf1.Variable(
          tf.zeros(tensor.shape, tensor.dtype), trainable=False,
          collections=[tf1.GraphKeys.LOCAL_VARIABLES],
          name='deferred_gradient_%d' % self.count)
      self.count += 1
      previous = tf.identity(held.read_value())
      with tf.control_dependencies([previous]):
        store = held.assign(tensor)
      with tf.control_dependencies([store]):
        return tf.identity(previous)


def _flat(t):
  return tf.reshape(t, [-1])


def _even_sizes(total, parts):
  """Sizes of ``parts`` pieces of ``total`` elements (the last takes the
  remainder; pieces may be empty)."""
  size = total // parts
  return [size] * (parts - 1) + [total - size * (parts - 1)]


class _TowerPacker:
  """Step 1 for one tower, and its undo."""

  def __init__(self, opts, defer):
    self.opts, self.defer = opts, defer

  def pack(self, tensors):
    self.shapes = [t.shape for t in tensors]
    self.dtypes = [t.dtype for t in tensors]
    if self.opts.repack_chunks:
      tensors = [tf.concat([_flat(t) for t in tensors], 0)]
    if self.opts.transfer_dtype is not None:
      tensors = [tf.cast(t, self.opts.transfer_dtype) for t in tensors]
    if self.opts.defer:
      tensors = [self.defer(t) for t in tensors]
    if self.opts.repack_chunks:
      (whole,) = tensors
      tensors = tf.split(whole, _even_sizes(whole.shape.num_elements(),
                                            self.opts.repack_chunks))
    return tensors

  def unpack(self, tensors):
    if self.opts.repack_chunks:
      tensors = [tf.concat(tensors, 0)]
    if self.opts.transfer_dtype is not None:
      dtypes = self.dtypes[:1] if self.opts.repack_chunks else self.dtypes
      tensors = [tf.cast(t, d) for t, d in zip(tensors, dtypes)]
    if self.opts.repack_chunks:
      sizes = [s.num_elements() for s in self.shapes]
      tensors = [tf.reshape(t, s) for t, s in zip(
          tf.split(tensors[0], sizes), self.shapes)]
    return tensors


def _small_groups(tensors, max_bytes, max_group):
  """Runs of >= 2 consecutive small float tensors, each at most max_group
  long (the original packs only neighbours: gradients of one layer)."""
  groups, run = [], []
  for i, t in enumerate(tensors):
    small = (t.dtype.is_floating and
             t.shape.num_elements() * t.dtype.size <= max_bytes)
    if small and len(run) < max_group:
      run.append(i)
      continue
    if len(run) > 1:
      groups.append(run)
    run = [i] if small else []
  if len(run) > 1:
    groups.append(run)
  return groups


def _aggregate_small(device_tensors, opts):
  """Step 2: [(concat of each group)...] + the rest, per tower; and how to
  undo it."""
  groups = _small_groups(device_tensors[0], opts.agg_max_bytes,
                         opts.agg_max_group)
  grouped = {i for g in groups for i in g}
  rest = [i for i in range(len(device_tensors[0])) if i not in grouped]
  packed = []
  for tensors in device_tensors:
    with tf1.device(tensors[0].device), tf.name_scope('aggregate_small'):
      packed.append([tf.concat([_flat(tensors[i]) for i in g], 0)
                     for g in groups] + [tensors[i] for i in rest])

  def undo(reduced, originals):
    out = [None] * len(originals)
    for k, g in enumerate(groups):
      with tf.name_scope('split_small'):
        pieces = tf.split(reduced[k], [originals[i].shape.num_elements()
                                       for i in g])
        for i, piece in zip(g, pieces):
          out[i] = tf.reshape(piece, originals[i].shape)
    for k, i in enumerate(rest):
      out[i] = reduced[len(groups) + k]
    return out

  return packed, undo


def _spread(tensors, devices, index):
  """The harness's default: the mean on one tower, round-robin."""
  with tf1.device(devices[index % len(devices)]):
    return [base.mean_of(tensors)] * len(devices)


def _shuffle(tensors, devices, reducers):
  """pscpu/psgpu: each of len(reducers) shards summed on its reducer, then
  gathered back on every tower."""
  n = len(tensors)
  sizes = _even_sizes(tensors[0].shape.num_elements(), len(reducers))
  shards = []
  for t, device in zip(tensors, devices):
    with tf1.device(device):
      shards.append(tf.split(_flat(t), sizes))
  sums = []
  for k, reducer in enumerate(reducers):
    with tf1.device(reducer):
      sums.append(tf.math.add_n([s[k] for s in shards]) * (1.0 / n))
  out = []
  for device in devices:
    with tf1.device(device):
      out.append(tf.reshape(tf.concat(sums, 0), tensors[0].shape))
  return out


def _ring(tensors, devices, num_rings, first_order=()):
  """xring: a ring all-reduce built from plain ops across the towers.

  Each tensor is cut into len(devices) pieces per ring. Reduce-scatter:
  piece c starts on the tower after c and is added, tower by tower, around
  the ring, ending on tower c with the full sum (N-1 adds, each on the tower
  that owns the addend). All-gather: that sum is copied on around the ring.
  A second ring runs the other way round, on its own pieces.
  ``first_order``: the towers in ring order (--gpu_indices), else their
  own.
  """
  n = len(devices)
  first = list(first_order) or list(range(n))
  pieces = []
  sizes = _even_sizes(tensors[0].shape.num_elements(), n * num_rings)
  for t, device in zip(tensors, devices):
    with tf1.device(device):
      pieces.append(tf.split(_flat(t), sizes))
  result = [[None] * len(sizes) for _ in devices]
  for ring in range(num_rings):
    order = first if ring % 2 == 0 else list(reversed(first))
    for c in range(n):
      p = ring * n + c
      total = pieces[order[(c + 1) % n]][p]
      for step in range(2, n + 1):
        tower = order[(c + step) % n]
        with tf1.device(devices[tower]):
          total = tf.add(total, pieces[tower][p])
      with tf1.device(devices[order[c]]):
        value = total * (1.0 / n)
      result[order[c]][p] = value
      for step in range(1, n):
        tower = order[(c + step) % n]
        with tf1.device(devices[tower]):
          value = tf.identity(value)
        result[tower][p] = value
  out = []
  for d, device in enumerate(devices):
    with tf1.device(device):
      out.append(tf.reshape(tf.concat(result[d], 0), tensors[0].shape))
  return out


def _nccl(tensors, devices):
  """nccl (and, in one process, its hybrids): TensorFlow's NCCL
  all-reduce across the GPU towers, each sum divided there."""
  if not all(_is_gpu(d) for d in devices):
    raise ValueError('--all_reduce_spec=nccl reduces between GPUs, but the '
                     'towers are %s; use pscpu or xring.' % ', '.join(devices))
  # Loaded only by runs that use it: the op is registered in every build,
  # its kernels only in GPU builds.
  from tensorflow.python.ops import nccl_ops  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  sums = nccl_ops.all_sum(list(tensors))
  out = []
  for total, device in zip(sums, devices):
    with tf1.device(device):
      out.append(total * (1.0 / len(devices)))
  return out


def _is_gpu(device):
  return tf.DeviceSpec.from_string(device).device_type in ('GPU', 'gpu')


# --network_topology: the main towers (of the first half's sum, of the
# second's) for gradient i of N towers. A DGX-1's two NVLink cliques are
# towers 0-3 and 4-7, each tower linked to its twin i + 4; a GCP V100
# machine links its cliques by 0-5 and 2-7 only.
_GCP_V100_MAIN_PAIRS = ((0, 5), (2, 7), (5, 0), (7, 2))


def _main_towers(index, num_devices, topology):
  if topology == 'gcp_v100':
    return _GCP_V100_MAIN_PAIRS[index % len(_GCP_V100_MAIN_PAIRS)]
  return index % num_devices, (index + num_devices // 2) % num_devices


def _hierarchical(tensors, devices, index, topology):
  """--hierarchical_copy: each half of the towers summed on its main
  tower, the two sums added (and divided) on the first, the mean copied
  back to each half through its main tower."""
  n = len(devices)
  half = n // 2
  main = _main_towers(index, n, topology)
  halves = [range(0, half), range(half, n)]
  if main[0] >= half:
    halves.reverse()  # the first main tower's own half first
  sums = []
  for main_tower, members in zip(main, halves):
    with tf1.device(devices[main_tower]):
      sums.append(tf.math.add_n([tensors[i] for i in members]))
  with tf1.device(devices[main[0]]):
    mean = tf.math.add_n(sums) * (1.0 / n)
  copies = []
  for main_tower in main:
    with tf1.device(devices[main_tower]):
      copies.append(tf.identity(mean))
  out = []
  for d, device in enumerate(devices):
    with tf1.device(device):
      out.append(tf.identity(copies[0 if d in halves[0] else 1]))
  return out


def _reduce_one(tensors, devices, rng, index, opts):
  if len(devices) == 1:
    return list(tensors)
  if opts.hierarchical is not None:
    return _hierarchical(tensors, devices, index, opts.hierarchical)
  if rng.alg.startswith('nccl'):
    return _nccl(tensors, devices)
  if rng.alg == all_reduce_spec.SPREAD:
    return _spread(tensors, devices, index)
  if rng.alg == 'xring':
    return _ring(tensors, devices, rng.shards, opts.ring_order)
  if rng.alg in ('pscpu', 'pscpu/pscpu'):
    # One process has one CPU to gather on; shards split the tensor there.
    return _shuffle(tensors, devices, ['/cpu:0'] * rng.shards)
  if rng.alg == 'psgpu':
    if not all(_is_gpu(d) for d in devices):
      raise ValueError('--all_reduce_spec=psgpu reduces on GPUs, but the '
                       'towers are %s; use pscpu or xring.' % ', '.join(
                           devices))
    # The original's groups of `shards` GPUs, chosen round-robin.
    group = [devices[(index * rng.shards + k) % len(devices)]
             for k in range(rng.shards)]
    return _shuffle(tensors, devices, group)
  raise ValueError('all-reduce algorithm %s does not run here' % rng.alg)


def batch_mean(device_tensors, devices, opts, defer=None):
  """device_tensors[d][j]: gradient j on tower d -> its mean, per tower."""
  defer = defer or Deferred()
  packers = [_TowerPacker(opts, defer) for _ in devices]
  packed = []
  for packer, tensors, device in zip(packers, device_tensors, devices):
    with tf1.device(device):
      packed.append(packer.pack(tensors))
  undo_small = None
  if opts.agg_max_bytes > 0 and opts.agg_max_group > 0:
    originals = packed[0]
    packed, undo_small = _aggregate_small(packed, opts)
  per_tensor = list(zip(*packed))
  reduced = []
  for start in range(0, len(per_tensor), opts.merge_scope):
    # A scope per merge_scope tensors, as the original groups them for
    # TensorFlow's ScopedAllocator.
    with tf.name_scope('allreduce'):
      for j in range(start, min(start + opts.merge_scope, len(per_tensor))):
        tensors = per_tensor[j]
        rng = next(r for r in opts.ranges
                   if r.takes(tensors[0].shape.num_elements()))
        reduced.append(_reduce_one(tensors, devices, rng, j, opts))
  out = []
  for packer, tensors, device in zip(packers, zip(*reduced), devices):
    with tf1.device(device):
      if undo_small is not None:
        tensors = undo_small(tensors, originals)
      out.append(packer.unpack(list(tensors)))
  return out
