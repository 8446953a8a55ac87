"""op_time.py: op time by type from a real traced step, and the MFU ceiling."""

import pytest

from tests.driver_helpers import run_quietly
from tf_cnn_benchmarks.measure import op_time


def test_renamed_ops_map_back_to_the_graph_op_type():
  assert op_time.canonical_op_type('_MklNativeConv2DBackpropFilter') == \
      'Conv2DBackpropFilter'
  assert op_time.canonical_op_type('_MklMatMul') == 'MatMul'
  assert op_time.canonical_op_type('_FusedMatMul') == 'FusedMatMul'
  assert op_time.canonical_op_type('ReluGrad') == 'ReluGrad'
  assert op_time.is_counted('Conv2DBackpropInput')
  assert op_time.is_counted('FusedConv2D')
  assert op_time.is_counted('Conv2DBackpropFilterWithBias')  # vgg16's
  assert op_time.is_counted('FusedMatMul')
  assert not op_time.is_counted('FusedBatchNormV3')
  assert not op_time.is_counted('FusedBatchNormGradV3')
  assert not op_time.is_counted('AddN')


@pytest.fixture(scope='module')
def traced_resnet20(tmp_path_factory):
  trace = tmp_path_factory.mktemp('trace') / 'resnet20.json'
  result, _ = run_quietly(model='resnet20', data_name='cifar10', batch_size=8,
                          num_inter_threads=1, trace_file=str(trace))
  return result, trace


def test_a_traced_resnet_step_splits_into_counted_and_other_ops(
    traced_resnet20):
  _, trace = traced_resnet20
  times = op_time.from_chrome_trace(str(trace))
  # Every convolution of the forward and backward pass shows up, counted.
  for op_type in ('Conv2D', 'Conv2DBackpropInput', 'Conv2DBackpropFilter'):
    assert times.seconds_by_type[op_type] > 0
    assert op_time.is_counted(op_type)
  # resnet20: the stem plus 9 blocks of two 3x3 convs (pad-and-pool shortcuts).
  assert times.count_by_type['Conv2D'] == 19
  # Batch norm's gradient takes time but does no counted FLOPs.
  assert times.seconds_by_type['FusedBatchNormGradV3'] > 0
  assert 0 < times.counted_sec < times.total_sec
  assert 0 < times.counted_share < 1


def test_the_ceiling_is_the_step_flops_over_the_counted_time(traced_resnet20):
  result, trace = traced_resnet20
  times = op_time.from_chrome_trace(str(trace))
  summary = result.record['summary']
  step_gflops = summary['gflops_per_image'] * 8
  peak = 100.0
  ceiling = times.ceiling_mfu(step_gflops, peak)
  assert ceiling == pytest.approx(step_gflops / times.counted_sec / peak)
  # Freeing the other ops can only raise utilisation over the traced step's.
  assert ceiling > step_gflops / times.total_sec / peak
  assert times.ceiling_mfu(step_gflops, None) is None
  text = op_time.describe(times, step_gflops, peak)
  assert 'Conv2DBackpropFilter' in text and '(no counted FLOPs)' in text
  assert 'MFU ceiling' in text


def _xspace_file(tmp_path, lines):
  """An .xplane.pb with one host plane; lines: [[(name, start_us, dur_us)]]."""
  xplane_pb2 = op_time._xplane_pb2()  # pylint: disable=protected-access
  space = xplane_pb2.XSpace()
  plane = space.planes.add(name='/host:CPU')
  ids = {}
  for events in lines:
    line = plane.lines.add(name='tf_Compute')
    for name, start, duration in events:
      if name not in ids:
        ids[name] = len(ids) + 1
        plane.event_metadata[ids[name]].id = ids[name]
        plane.event_metadata[ids[name]].name = name
      line.events.add(metadata_id=ids[name], offset_ps=start * 10**6,
                      duration_ps=duration * 10**6)
  path = tmp_path / 'step.xplane.pb'
  path.write_bytes(space.SerializeToString())
  return str(path)


def test_profiler_ops_count_their_self_time_once(tmp_path):
  path = _xspace_file(tmp_path, [
      [('ExecutorState::Process', 0, 500),  # the profiler's own: not an op
       ('call:StatefulPartitionedCall', 0, 400),  # waits for its function
       ('dense/MatMul:_MklMatMul', 10, 100),
       ('dense/Relu:Relu', 50, 20),  # inline inside the MatMul's span
       ('Apply:ResourceApplyGradientDescent', 200, 30)],
      [('wrapped_reduce-window.12', 0, 40), ('convolution.3', 50, 60),
       ('EagerLocalExecute: __inference_step_23', 0, 900)]])
  times = op_time.from_xspace(path)
  assert times.seconds_by_type == pytest.approx({
      'MatMul': 80e-6, 'Relu': 20e-6, 'ResourceApplyGradientDescent': 30e-6,
      'xla:reduce-window': 40e-6, 'xla:convolution': 60e-6})
  assert times.count_by_type['MatMul'] == 1
  assert times.counted_sec == pytest.approx(140e-6)  # MatMul + convolution
