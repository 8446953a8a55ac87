"""What one extra, untimed step can tell: a trace, a profile, the partitions.

--trace_file, --tfprof_file and --partitioned_graph_file_prefix all need the
RunMetadata of a step run with extra options, and tracing slows the step it
traces; so they share one extra step after the timed loop, and none of them
touches the timed numbers.
"""

import os

import tensorflow as tf

from basics import atomic_files

tf1 = tf.compat.v1

# Ops printed after a --tfprof_file profile (the original printed 20).
NUM_OPS_TO_PRINT = 20


def wanted(params):
  return bool(params.trace_file or params.tfprof_file or
              params.partitioned_graph_file_prefix)


def profile_extra_step(sess, fetches, params, runtime, reporter):
  """Runs one extra step with the options the flags need; writes the files."""
  options = tf1.RunOptions()
  if params.trace_file or params.tfprof_file:
    options.trace_level = tf1.RunOptions.FULL_TRACE
  if params.partitioned_graph_file_prefix:
    options.output_partition_graphs = True
  metadata = tf1.RunMetadata()
  sess.run(fetches, runtime.untimed_step_feed(), options=options,
           run_metadata=metadata)
  if params.trace_file:
    path = runtime.task_file_path(params.trace_file)
    write_trace(metadata, path, params.use_chrome_trace_format)
    reporter.say('Wrote a trace of one extra step to %s' % path)
  if params.tfprof_file:
    path = runtime.task_file_path(params.tfprof_file)
    for line in write_tfprof(sess.graph, metadata, path):
      reporter.say(line)
  if params.partitioned_graph_file_prefix:
    prefix = runtime.task_file_path(params.partitioned_graph_file_prefix)
    for path in write_partition_graphs(metadata, prefix):
      reporter.say('Wrote a partitioned graph to %s' % path)


def write_trace(metadata, path, chrome_format=True):
  """A Chrome trace (chrome://tracing, Perfetto), or with
  --nouse_chrome_trace_format the StepStats protobuf as text, as the
  original wrote it."""
  if chrome_format:
    from tensorflow.python.client import timeline  # pylint: disable=g-import-not-at-top
    text = timeline.Timeline(metadata.step_stats).generate_chrome_trace_format(
        show_memory=True)
  else:
    text = str(metadata.step_stats)
  atomic_files.write_text_atomically(path, text)


def write_tfprof(graph, metadata, path):
  """Writes the step's ProfileProto (for the tfprof tool); returns report
  lines: where it went and the most time-consuming ops."""
  profiler = tf1.profiler.Profiler(graph)
  profiler.add_step(0, metadata)
  atomic_files.write_bytes_atomically(path, profiler.serialize_to_string())
  options = (tf1.profiler.ProfileOptionBuilder(
      tf1.profiler.ProfileOptionBuilder.time_and_memory())
             .with_max_depth(NUM_OPS_TO_PRINT)
             .order_by('micros').with_empty_output().build())
  top = profiler.profile_operations(options)
  lines = ['Wrote a tfprof profile of one extra step to %s' % path,
           'Top ops by time (op type, total time, count):']
  for node in ranked_op_types(top)[:NUM_OPS_TO_PRINT]:
    lines.append('  %-32s %10.3f ms  %d' % (
        node.name, node.exec_micros / 1000.0, len(node.graph_nodes)))
  return lines


def ranked_op_types(top):
  """The op view's nodes in its order. tfprof returns that list as a chain,
  each op type the only child of the one before it, and a node's
  total_exec_micros sums the rest of the chain; an op type's own time is its
  exec_micros."""
  nodes = []
  node = top
  while node.children:
    node = node.children[0]
    nodes.append(node)
  return nodes


def partition_file_name(prefix, graph_def):
  """PREFIX<device><.ext>: the device of the partition's first node with
  '/' and ':' as '_', put before the prefix's extension (the original's
  names)."""
  folder, name = os.path.split(prefix)
  base, dot, ext = name.rpartition('.')
  if not dot:
    base, ext = name, ''
  device = graph_def.node[0].device.replace('/', '_').replace(':', '_')
  return os.path.join(folder, base + device + (dot + ext if dot else ''))


def write_partition_graphs(metadata, prefix):
  """One GraphDef file per device partition; text if the prefix ends in
  'txt', else binary. Returns the paths."""
  as_text = prefix.endswith('txt')
  paths = []
  for graph_def in metadata.partition_graphs:
    path = partition_file_name(prefix, graph_def)
    if as_text:
      atomic_files.write_text_atomically(path, str(graph_def))
    else:
      atomic_files.write_bytes_atomically(path, graph_def.SerializeToString())
    paths.append(path)
  return paths
