#!/usr/bin/env python3
"""Where a single process's time goes in its timed loop: CPU per image and
how many cores it kept busy, ours and the original's, on the same flags.

  python benchmarks/timed_loop_cpu.py [--original_dir=DIR]
      [--original_python=PY] [--rounds=3] [--tools=ours,original]
      -- --model=trivial --batch_size=32 --num_batches=400 \
         --data_dir=SHARDS --data_name=imagenet ...

images/sec is CPU per image times cores kept busy, so the two columns say
why one tool is faster: it does less work per image, or it leaves fewer
cores idle (an input pipeline that keeps too little in flight, a step that
waits). Both are read between the run's "Done warm up" line and its
"total images/sec" line, from /proc: the process's own CPU time (all its
threads) and the machine's busy time (others' share = the rest). Tools
alternate within each round. Linux only.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

import original_tool
from subprocess_runs import HARNESS, REPO

from tf_cnn_benchmarks.measure import cpu_share

CPU_FLAGS = ('--device=cpu', '--data_format=NHWC',
             '--local_parameter_device=cpu', '--display_every=1000')
TOOLS = ('ours', 'original')
MIN_WINDOW_SECONDS = 1.0


def _process_cpu_seconds(pid):
  """CPU-seconds of the process's threads so far (psutil, as cpu_share)."""
  times = psutil.Process(pid).cpu_times()
  return times.user + times.system


def measure(cmd, env, cwd, batches_images):
  """{'images_per_sec', 'cpu_ms_per_image', 'cores_busy', 'others'}."""
  proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
  start = end = None
  rate = None
  lines = []
  for line in proc.stdout:
    lines.append(line)
    if line.startswith('Done warm up'):
      start = (time.perf_counter(), _process_cpu_seconds(proc.pid),
               cpu_share.machine_busy_seconds())
    elif line.startswith('total images/sec:'):
      end = (time.perf_counter(), _process_cpu_seconds(proc.pid),
             cpu_share.machine_busy_seconds())
      rate = float(line.split(':')[1])
  if proc.wait() != 0 or start is None or end is None:
    raise RuntimeError('%s\nfailed (exit %s):\n%s' % (
        ' '.join(cmd), proc.returncode, ''.join(lines[-30:])))
  wall, cpu, busy = (e - s for e, s in zip(end, start))
  if wall < MIN_WINDOW_SECONDS:
    # /proc counts CPU time in clock ticks (1/100 s): over a shorter loop
    # one tick more or less is a large share, and `others` came out at -84%.
    raise RuntimeError(
        'the timed loop lasted %.3f s; CPU time is read from /proc in '
        '1/%d s ticks, too coarse for a loop under %g s. Raise '
        '--num_batches (or --batch_size) so the timed loop lasts longer.' % (
            wall, os.sysconf('SC_CLK_TCK'), MIN_WINDOW_SECONDS))
  return {'images_per_sec': rate,
          'cpu_ms_per_image': 1000.0 * cpu / batches_images,
          'cores_busy': cpu / wall,
          'others': (busy - cpu) / (wall * os.cpu_count())}


def _images(flags):
  values = dict(f[2:].split('=', 1) for f in flags if '=' in f)
  return int(values.get('batch_size', 32)) * int(values.get('num_batches',
                                                            100))


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  p.add_argument('--original_dir', default=original_tool.default_dir())
  p.add_argument('--original_python', default=original_tool.default_python())
  p.add_argument('--rounds', type=int, default=3)
  p.add_argument('--tools', default=','.join(TOOLS))
  p.add_argument('flags', nargs='*', help='benchmark flags for both tools')
  args = p.parse_args(argv)
  tools = args.tools.split(',')
  flags = list(CPU_FLAGS) + args.flags
  if 'original' in tools:
    problem = original_tool.problem(args.original_dir, args.original_python)
    if problem:
      sys.exit(problem)
  env = dict(os.environ, PYTHONUNBUFFERED='1', TF_CPP_MIN_LOG_LEVEL='2')
  commands = {'ours': ([sys.executable, HARNESS] + flags + [
      '--result_dir=%s' % tempfile.mkdtemp(prefix='timed_loop_cpu_')],
                        env, REPO)}
  if 'original' in tools:
    script = original_tool.script_path(args.original_dir)
    commands['original'] = ([args.original_python, script] + flags,
                            dict(env, **original_tool.environment()),
                            os.path.dirname(script))
  results = {tool: [] for tool in tools}
  print('%-9s %5s %12s %15s %11s %7s' % ('tool', 'round', 'images/sec',
                                         'cpu ms/image', 'cores busy',
                                         'others'))
  for round_index in range(1, args.rounds + 1):
    for tool in tools:
      try:
        got = measure(*commands[tool], _images(flags))
      except RuntimeError as e:
        sys.exit('%s: %s' % (tool, e))
      results[tool].append(got)
      print('%-9s %5d %12.1f %15.3f %11.2f %6.0f%%' % (
          tool, round_index, got['images_per_sec'], got['cpu_ms_per_image'],
          got['cores_busy'], 100 * got['others']), flush=True)
  print('medians:')
  for tool in tools:
    med = {k: statistics.median(r[k] for r in results[tool])
           for k in results[tool][0]}
    print('%-9s %5s %12.1f %15.3f %11.2f %6.0f%%' % (
        tool, '', med['images_per_sec'], med['cpu_ms_per_image'],
        med['cores_busy'], 100 * med['others']))
  return 0


if __name__ == '__main__':
  sys.exit(main())
