"""Floating-point operations of one step, counted from the step's graph.

Method: walk back from the step's fetches to every op the session will run
(data and control inputs), and add up the FLOPs of the matrix-multiply-class
ops among them from their static shapes, 2 FLOPs per multiply-add:

* Conv2D and its two backprop ops: 2 x (output-gradient or output elements)
  x kh x kw x (input channels per group);
* DepthwiseConv2dNative and its backprop ops: 2 x elements x kh x kw;
* MatMul / BatchMatMul: 2 x output elements x the contracted dimension.

These are the "model FLOPs" of the model-FLOP-utilisation convention:
element-wise work (batch norm, ReLU, the optimizer update, casts) is left
out; for the CNNs here it is about 1% of the total and runs far below the
machine's matrix peak anyway, so counting it would only blur the ratio.

Only executed ops count: ``tf.gradients`` also builds gradients nobody
fetches (the first convolution's input gradient), which the session prunes.
Why not TensorFlow's profiler (``tf.compat.v1.profiler.profile`` with
``float_operation()``)? It works in 2.21 and agrees on forward
convolutions, but it counts every op in the graph (initialisers and pruned
gradients included), has no count for the depthwise backprop ops, and counts
element-wise ops only for types that happen to register a statistic.

Ops inside function bodies (tf.function, functional While) are not seen;
the harness counts a single step's graph, where there are none.
"""

import collections
import dataclasses
from typing import Dict, List

_CONV_OPS = ('Conv2D', 'Conv2DBackpropInput', 'Conv2DBackpropFilter')
_DEPTHWISE_OPS = ('DepthwiseConv2dNative',
                  'DepthwiseConv2dNativeBackpropInput',
                  'DepthwiseConv2dNativeBackpropFilter')
_MATMUL_OPS = ('MatMul', 'BatchMatMul', 'BatchMatMulV2', 'BatchMatMulV3')
COUNTED_OP_TYPES = _CONV_OPS + _DEPTHWISE_OPS + _MATMUL_OPS


@dataclasses.dataclass
class StepFlops:
  total: int
  by_op_type: Dict[str, int]
  # Counted op types whose shapes were not static (their FLOPs are missing).
  unknown_shape_ops: List[str]

  def per_image(self, images_per_step):
    return self.total / float(images_per_step)


def _elements(shape):
  dims = shape.as_list() if hasattr(shape, 'as_list') else list(shape)
  if dims is None or any(d is None for d in dims):
    return None
  n = 1
  for d in dims:
    n *= int(d)
  return n


def _dims(shape):
  try:
    dims = shape.as_list()
  except ValueError:  # unknown rank
    return None
  return None if any(d is None for d in dims) else dims


def _window_shapes(op):
  """(elements of the output side, filter dims) of a convolution-class op,
  or None when a shape is unknown.

  The output side is the forward output or the incoming output gradient;
  the filter is [kh, kw, in, out (or multiplier)] in either data format.
  """
  if op.type.endswith('BackpropInput'):
    out, filt = op.inputs[2].shape, op.inputs[1].shape
  elif op.type.endswith('BackpropFilter'):
    # The filter gradient has the filter's shape.
    out, filt = op.inputs[2].shape, op.outputs[0].shape
  else:  # the forward op
    out, filt = op.outputs[0].shape, op.inputs[1].shape
  elements, filt = _elements(out), _dims(filt)
  if elements is None or filt is None:
    return None
  return elements, filt


def _conv_flops(op):
  """All three convolution ops do elements(output side) x window x Cin MACs."""
  shapes = _window_shapes(op)
  if shapes is None:
    return None
  elements, (kh, kw, cin, _) = shapes
  return 2 * elements * kh * kw * cin


def _depthwise_flops(op):
  """Each output channel of a depthwise conv sees one kh x kw window."""
  shapes = _window_shapes(op)
  if shapes is None:
    return None
  elements, filt = shapes
  return 2 * elements * filt[0] * filt[1]


def _matmul_flops(op):
  a = _dims(op.inputs[0].shape)
  elements = _elements(op.outputs[0].shape)
  if a is None or elements is None:
    return None
  if op.type == 'MatMul':
    contracted = a[0] if op.get_attr('transpose_a') else a[1]
  else:
    contracted = a[-2] if op.get_attr('adj_x') else a[-1]
  return 2 * elements * contracted


def op_flops(op):
  """FLOPs of one op (0 if not a counted type, None if shapes unknown)."""
  if op.type in _CONV_OPS:
    return _conv_flops(op)
  if op.type in _DEPTHWISE_OPS:
    return _depthwise_flops(op)
  if op.type in _MATMUL_OPS:
    return _matmul_flops(op)
  return 0


def executed_ops(fetches):
  """Every op a session.run of ``fetches`` (ops/tensors, nested) runs."""
  pending = [getattr(f, 'op', f) for f in _flatten(fetches)]
  seen = {}
  while pending:
    op = pending.pop()
    if op.name in seen:
      continue
    seen[op.name] = op
    pending.extend(t.op for t in op.inputs)
    pending.extend(op.control_inputs)
  return list(seen.values())


def _flatten(fetches):
  if isinstance(fetches, dict):
    fetches = list(fetches.values())
  if isinstance(fetches, (list, tuple)):
    out = []
    for f in fetches:
      out.extend(_flatten(f))
    return out
  return [] if fetches is None else [fetches]


def count(fetches):
  """StepFlops of one session.run of ``fetches``."""
  by_type = collections.Counter()
  unknown = []
  for op in executed_ops(fetches):
    flops = op_flops(op)
    if flops is None:
      unknown.append(op.name)
    elif flops:
      by_type[op.type] += flops
  return StepFlops(total=sum(by_type.values()), by_op_type=dict(by_type),
                   unknown_shape_ops=sorted(unknown))
