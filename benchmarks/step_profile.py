#!/usr/bin/env python3
"""What one worker's step costs in a loopback cluster: RPCs, ops, time.

  python benchmarks/step_profile.py [--variable_update=parameter_server]
      [--sync_updates=mean|barrier] [--cross_replica_sync=True]
      [--model=trivial --batch_size=32 --workers=2 --ps=1 --num_batches=20]
      [--keep DIR] [--original_dir DIR [--original_python PY]]
      [any other benchmark flag after --]

Launches the cluster through `tf_cnn_benchmarks launch` with the harness's own
--partitioned_graph_file_prefix and --trace_file (one extra, untimed step after
the timed loop, engine_graph/profiling.py), then reads the chief's files:

* per step, the partitions the step runs (one RunGraph RPC per other task)
  and every tensor that crosses tasks (one RecvTensor RPC each), grouped by
  what it carries: variable reads, gradients, the sync token queue or
  barrier, the progress board, the global step, control edges;
* ops per partition and by type (what the chief adds to each step);
* from the chief's run record, the split of the timed loop's wall time
  into session.run time and time between steps;
* from the trace, each device's busy time and the longest ops (on a busy
  machine only the counts are worth quoting, not these times).

With --original_dir (a checkout of tensorflow/benchmarks, run as
benchmarks/original_tool.py runs it) the same cluster runs the original
tool instead, with the same two flags on its chief only (its tasks would
all write to one path): its step is counted the same way. It has no
--sync_updates (its synchronous ps mode is what ours calls `barrier`) and
writes no run record, so there is no time split; its traced step is a
warm-up step.
"""

import argparse
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import original_tool
import subprocess_runs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, 'tf_cnn_benchmarks.py')

# Substrings of a crossing tensor's name -> what it carries (first match).
CATEGORIES = (
    ('cluster_steps_', 'progress board'),
    ('cluster_compute_seconds', 'progress board'),
    ('GroupCrossDeviceControlEdges', 'control edge'),
    ('Timestamp', 'progress board'),
    ('sync_token_queue', 'sync token queue'),
    ('sync_barrier_queue', 'sync barrier'),
    ('sync_local_step', 'sync local step'),
    ('global_step', 'global step'),
    ('gradients', 'gradient'),
    # A batch's mean and variance, sent to the moving statistics' update
    # beside them on the ps (models/layers.py).
    ('FusedBatchNorm', 'batch-norm statistic'),
    ('ReadVariableOp', 'variable read'),
)


def category(tensor_name):
  for key, name in CATEGORIES:
    if key in tensor_name:
      return name
  return 'other'


def task_of(device):
  """'/job:ps/replica:0/task:0/device:CPU:0' -> '/job:ps/task:0'."""
  parts = [p for p in device.split('/') if p.startswith(('job:', 'task:'))]
  return '/' + '/'.join(parts)


def common_flags(args):
  """The benchmark flags both tools take alike."""
  return ['--model=%s' % args.model, '--batch_size=%d' % args.batch_size,
          '--num_batches=%d' % args.num_batches,
          '--num_warmup_batches=%d' % args.num_warmup_batches,
          '--device=cpu', '--data_format=NHWC',
          '--variable_update=%s' % args.variable_update,
          '--cross_replica_sync=%s' % args.cross_replica_sync]


def profile_flags(out_dir):
  """The chief's trace and partition graphs, in ``out_dir``."""
  return ['--trace_file=%s' % os.path.join(out_dir, 'trace.json'),
          '--partitioned_graph_file_prefix=%s' % os.path.join(
              out_dir, 'part.pbtxt')]


def launch_original(args, extra, out_dir):
  """The original's cluster (ps tasks, then workers), profiled on worker0."""
  python = args.original_python or original_tool.default_python()
  why = original_tool.problem(args.original_dir, python)
  if why:
    sys.exit(why)
  original = original_tool.Original(
      args.original_dir, python,
      subprocess_runs.Runner(max_other_share=None, result_dir=out_dir),
      timeout=args.timeout)
  try:
    original.run_cluster(common_flags(args) + list(extra), args.ps,
                         args.workers,
                         task_flags={'worker0': profile_flags(out_dir)})
  except subprocess_runs.RunFailed as e:
    sys.exit('the original\'s cluster failed: %s' % e)


def launch(args, extra, out_dir):
  flags = common_flags(args) + ['--result_dir=%s' % out_dir] + profile_flags(
      out_dir)
  if args.sync_updates:
    flags.append('--sync_updates=%s' % args.sync_updates)
  command = [sys.executable, SCRIPT, 'launch', '--ps', str(args.ps),
             '--workers', str(args.workers), '--'] + flags + list(extra)
  done = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                        timeout=args.timeout)
  if done.returncode != 0:
    sys.exit('the cluster failed (exit %d):\n%s' % (
        done.returncode, done.stdout[-4000:] + done.stderr[-2000:]))


def read_partitions(out_dir):
  """The chief's partition GraphDefs (worker1's carry '.worker1')."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  graphs = []
  for path in sorted(glob.glob(os.path.join(out_dir, 'part_*.pbtxt'))):
    with open(path) as f:
      graphs.append(text_format.Parse(f.read(), tf.compat.v1.GraphDef()))
  return graphs


def crossing_tensors(graphs):
  """[(send task, recv task, tensor name)] of the step's cross-task Recvs."""
  found = []
  for graph in graphs:
    for node in graph.node:
      if node.op not in ('_Recv', '_HostRecv'):
        continue
      send = task_of(node.attr['send_device'].s.decode())
      recv = task_of(node.attr['recv_device'].s.decode())
      if send != recv:
        found.append((send, recv, node.attr['tensor_name'].s.decode()))
  return found


def graph_summary(graphs, own_task):
  lines = []
  partitions = collections.Counter()
  for graph in graphs:
    device = graph.node[0].device if graph.node else '?'
    partitions[task_of(device)] += 1
    ops = collections.Counter(n.op for n in graph.node)
    lines.append('  %-40s %4d ops: %s' % (device, len(graph.node), ', '.join(
        '%s %d' % kv for kv in ops.most_common(8))))
  remote = sum(n for task, n in partitions.items() if task != own_task)
  return remote, lines


def timing_summary(out_dir):
  recs = []
  for path in glob.glob(os.path.join(out_dir, '*.json')):
    with open(path) as f:
      rec = json.load(f)
    if 'config' in rec and rec['config'].get('task_index') == 0:
      recs.append(rec)
  if not recs:
    return ['  (no chief record)']
  timing = recs[0]['timing']
  steps = timing['step_times_sec']
  wall = timing['timed_wall_time_sec']
  inside = sum(steps)
  return ['  %d timed steps, wall %.3f s: session.run %.1f ms/step, between '
          'steps %.2f ms/step (%.1f%% of the wall time)' % (
              len(steps), wall, 1000 * inside / len(steps),
              1000 * (wall - inside) / len(steps),
              100 * (wall - inside) / wall if wall else 0)]


def trace_summary(out_dir, top):
  with open(os.path.join(out_dir, 'trace.json')) as f:
    events = json.load(f)['traceEvents']
  names = {e['pid']: e['args']['name'] for e in events
           if e.get('ph') == 'M' and e.get('name') == 'process_name'}
  ops = [e for e in events if e.get('ph') == 'X']
  if not ops:
    return ['  (empty trace)']
  start = min(e['ts'] for e in ops)
  end = max(e['ts'] + e['dur'] for e in ops)
  lines = ['  traced step: %.2f ms end to end' % ((end - start) / 1000.0)]
  busy = collections.defaultdict(float)
  for e in ops:
    busy[names.get(e['pid'], e['pid'])] += e['dur']
  for device, micros in sorted(busy.items()):
    lines.append('  %-55s ops %.2f ms (summed over threads)' % (
        device, micros / 1000.0))
  lines.append('  longest ops (device, op, name, start after step start, '
               'duration):')
  for e in sorted(ops, key=lambda e: -e['dur'])[:top]:
    lines.append('    %-45s %-28s %-40s +%7.2f ms %7.2f ms' % (
        names.get(e['pid'], e['pid'])[-45:], e['args'].get('op', '')[:28],
        e['args'].get('name', '')[-40:], (e['ts'] - start) / 1000.0,
        e['dur'] / 1000.0))
  return lines


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--variable_update', default='parameter_server')
  parser.add_argument('--sync_updates', default='')
  parser.add_argument('--cross_replica_sync', default='True')
  parser.add_argument('--model', default='trivial')
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--workers', type=int, default=2)
  parser.add_argument('--ps', type=int, default=1)
  parser.add_argument('--num_batches', type=int, default=20)
  parser.add_argument('--num_warmup_batches', type=int, default=5)
  parser.add_argument('--top', type=int, default=12)
  parser.add_argument('--timeout', type=float, default=900)
  parser.add_argument('--keep', help='folder to keep the files in')
  parser.add_argument('--original_dir',
                      help='profile the original tool from this checkout '
                      'of tensorflow/benchmarks instead of ours')
  parser.add_argument('--original_python',
                      help='its interpreter (original_tool.py\'s default)')
  args, extra = parser.parse_known_args(argv)
  extra = [a for a in extra if a != '--']
  if args.original_dir and args.sync_updates:
    parser.error('--sync_updates is ours only: the original\'s synchronous '
                 'ps mode is always what ours calls barrier')
  out_dir = args.keep or tempfile.mkdtemp(prefix='step_profile_')
  os.makedirs(out_dir, exist_ok=True)
  try:
    if args.original_dir:
      launch_original(args, extra, out_dir)
      semantics = 'the original tool'
    else:
      launch(args, extra, out_dir)
      semantics = 'sync_updates=%s' % (args.sync_updates or 'mean')
    graphs = read_partitions(out_dir)
    own = '/job:worker/task:0'
    remote, graph_lines = graph_summary(graphs, own)
    crossing = crossing_tensors(graphs)
    print('Chief\'s step (%s, %s, %s, batch %d, %d ps, %d workers):' % (
        args.variable_update, semantics, args.model, args.batch_size,
        args.ps, args.workers))
    print('RPCs per step: %d RunGraph (partitions on other tasks) + %d '
          'RecvTensor (tensors crossing tasks)' % (remote, len(crossing)))
    by = collections.Counter((s, r, category(t)) for s, r, t in crossing)
    for (send, recv, what), n in sorted(by.items()):
      print('  %3d x %-18s %s -> %s' % (n, what, send, recv))
    print('Partitions (ops per step):')
    print('\n'.join(graph_lines))
    print('Time (chief\'s run record):')
    print('\n'.join(timing_summary(out_dir)))
    print('Trace of one extra step:')
    print('\n'.join(trace_summary(out_dir, args.top)))
    print('Crossing tensors:')
    for send, recv, tensor in sorted(crossing):
      print('  %s -> %s  %s' % (send, recv, tensor))
  finally:
    if not args.keep:
      shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == '__main__':
  main()
