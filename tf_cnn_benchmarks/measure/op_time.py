"""Where a traced step spends its time, and the MFU ceiling that sets.

A ``--trace_file`` Chrome trace has one event per executed op with its
duration. Summing them by op type shows how much of the step the
FLOP-counted ops (convolutions, matmuls: flops.COUNTED_OP_TYPES) take and
how much goes to ops that do no counted FLOPs (batch norm, ReLU gradients,
AddN, the optimizer).

The ceiling: if every uncounted op took no time at all and the counted ops
kept their traced speed, the step would take ``counted_sec`` and the MFU
would be ``step FLOPs / counted_sec / peak``. No amount of fusing the
element-wise ops gets past it; only faster convolution kernels do. Trace
with ``--num_inter_threads=1`` so ops do not overlap and the durations add
up to the step.

  python -m tf_cnn_benchmarks.measure.op_time TRACE.json [--step_gflops=G --peak_gflops=P]
"""

import argparse
import collections
import dataclasses
import json
import re
import sys
from typing import Dict, Optional

from tf_cnn_benchmarks.measure import flops

# oneDNN and grappler rename the ops they take over (_MklNativeConv2D,
# _MklNativeFusedConv2D, _FusedMatMul, ...): strip the prefixes to get the
# op type the graph was built with.
_RENAME_PREFIXES = ('_MklNative', '_Mkl', '_')


def canonical_op_type(traced_type):
  for prefix in _RENAME_PREFIXES:
    if traced_type.startswith(prefix):
      return traced_type[len(prefix):]
  return traced_type


def is_counted(op_type):
  """Whether an op type (canonical) does FLOPs that flops.py counts.

  Fused forms count too: grappler and oneDNN fold a bias or an activation
  into the matrix op (FusedConv2D, FusedMatMul, Conv2DBackpropFilterWithBias)
  and the matrix work is still the bulk of their time.
  """
  if op_type.startswith(XLA_PREFIX):
    op_type = op_type[len(XLA_PREFIX):]
    if op_type.startswith(_XLA_COUNTED_KINDS):
      return True
  if op_type.startswith('Fused'):
    op_type = op_type[len('Fused'):]
  return op_type.startswith(flops.COUNTED_OP_TYPES)


@dataclasses.dataclass
class OpTimes:
  seconds_by_type: Dict[str, float]
  count_by_type: Dict[str, int]

  @property
  def total_sec(self):
    return sum(self.seconds_by_type.values())

  @property
  def counted_sec(self):
    return sum(s for t, s in self.seconds_by_type.items() if is_counted(t))

  @property
  def counted_share(self):
    return self.counted_sec / self.total_sec if self.total_sec else 0.0

  def ceiling_mfu(self, step_gflops, peak_gflops):
    """MFU if every uncounted op were free (see the module docstring)."""
    if not self.counted_sec or not peak_gflops:
      return None
    return step_gflops / self.counted_sec / peak_gflops

  def top(self, n=10):
    return sorted(self.seconds_by_type.items(), key=lambda kv: -kv[1])[:n]


def from_chrome_trace(path):
  """Op durations of a trace written by the harness's --trace_file."""
  with open(path) as f:
    events = json.load(f)['traceEvents']
  seconds = collections.defaultdict(float)
  counts = collections.Counter()
  for event in events:
    if event.get('ph') != 'X':  # complete events are op executions
      continue
    op_type = canonical_op_type(event.get('args', {}).get('op',
                                                          event['name']))
    seconds[op_type] += event['dur'] / 1e6  # microseconds in the trace
    counts[op_type] += 1
  return OpTimes(dict(seconds), dict(counts))


# TensorFlow's profiler names an op's execution "NAME:TYPE" (its own
# TraceMe events are "Class::Method" or carry spaces).
_XSPACE_OP_EVENT = re.compile(r'^[^:\s]+:([A-Za-z_][A-Za-z0-9_]*)$')
# XLA runs a compiled step as HLO instructions, each traced by its name
# ("convolution.3", "wrapped_reduce-window.12", "MatMul.14": an HLO
# instruction keeps the TF op's name it came from); their kind is the name
# without the number and the "wrapped_" XLA:CPU adds.
_XSPACE_HLO_EVENT = re.compile(r'^(?:wrapped_)?([A-Za-z_][\w\-]*)\.\d+$')
XLA_PREFIX = 'xla:'
# HLO kinds that are the matrix work flops.py counts.
_XLA_COUNTED_KINDS = ('convolution', 'dot')
# Ops that run a function: their span holds the function's ops, which run on
# other threads too, so it is waiting, not work of their own.
_CALL_OP_TYPES = frozenset(('PartitionedCall', 'StatefulPartitionedCall'))


def _xplane_pb2():
  try:
    from tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top
  except ImportError:  # TensorFlow vendors tsl under its own package
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top
  return xplane_pb2


def from_xspace(path):
  """Op self times of a tf.profiler trace (an .xplane.pb): the same tracer
  for a session's steps and a tf.function's, so the two engines compare.

  An op run inline inside another op on the same thread (a function call
  op's small ops) counts once: its time is taken out of the op around it.
  """
  space = _xplane_pb2().XSpace()
  with open(path, 'rb') as f:
    space.ParseFromString(f.read())
  seconds = collections.defaultdict(float)
  counts = collections.Counter()
  for plane in space.planes:
    for line in plane.lines:
      ops = []
      for event in line.events:
        name = plane.event_metadata[event.metadata_id].name
        match = _XSPACE_OP_EVENT.match(name)
        if match:
          op_type = canonical_op_type(match.group(1))
        else:
          match = _XSPACE_HLO_EVENT.match(name)
          if not match:
            continue
          op_type = XLA_PREFIX + match.group(1)
        ops.append((event.offset_ps, event.duration_ps, op_type))
      ops.sort(key=lambda op: (op[0], -op[1]))
      open_ops = []  # [end_ps, op_type, self_ps] of the enclosing ops
      def close(until_ps):
        while open_ops and open_ops[-1][0] <= until_ps:
          _, op_type, self_ps = open_ops.pop()
          if op_type not in _CALL_OP_TYPES:
            seconds[op_type] += self_ps / 1e12
          counts[op_type] += 1
      for start, duration, op_type in ops:
        close(start)
        if open_ops:
          open_ops[-1][2] -= duration
        open_ops.append([start + duration, op_type, duration])
      close(float('inf'))
  return OpTimes(dict(seconds), dict(counts))


def describe(times, step_gflops: Optional[float] = None,
             peak_gflops: Optional[float] = None, top=8):
  lines = ['op time %.3f s; FLOP-counted ops (conv/matmul) %.3f s = %.1f%%'
           % (times.total_sec, times.counted_sec, 100 * times.counted_share)]
  for op_type, sec in times.top(top):
    lines.append('  %-32s %8.1f ms %5.1f%%  x%d%s' % (
        op_type, 1e3 * sec, 100 * sec / times.total_sec,
        times.count_by_type[op_type], '' if is_counted(op_type) else
        '  (no counted FLOPs)'))
  ceiling = times.ceiling_mfu(step_gflops, peak_gflops) if step_gflops \
      else None
  if ceiling is not None:
    lines.append('counted ops alone: %.1f GFLOP/s = %.1f%% of the %.1f '
                 'GFLOP/s peak (the MFU ceiling if all other ops were free)'
                 % (step_gflops / times.counted_sec, 100 * ceiling,
                    peak_gflops))
  return '\n'.join(lines)


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument('trace')
  p.add_argument('--step_gflops', type=float, default=None,
                 help='FLOPs of the traced step, in GFLOP (gflops_per_image '
                      'x global batch from the run record).')
  p.add_argument('--peak_gflops', type=float, default=None)
  args = p.parse_args(argv)
  print(describe(from_chrome_trace(args.trace), args.step_gflops,
                 args.peak_gflops))
  return 0


if __name__ == '__main__':
  sys.exit(main())
