"""The whole suite in the least wall time a 2-core machine gives it.

  python -m tests.run_suite [pytest arguments, given to every phase]

Run as one pytest process, the suite kept 1.2 of 2 cores busy on average
(the AVX2 host, 29 Nov): most of it is processes starting TensorFlow and
clusters waiting out their bounds. So it runs in two phases:

1. Two pytest processes at once. TIMED: the tests whose verdicts rest on
   real processes meeting bounds in seconds (tests/cluster and the top-level
   tests), at normal priority. COMPUTE: the in-process ones (models,
   preprocessing, results, the mutation check's own tests), at nice 19, so
   they take the CPU the timed ones leave idle and little else (the kernel
   gives a nice-19 process ~1.5% of a core a nice-0 one wants): no timed
   test's bound is met on a machine they load. Their wall-clock bounds
   (``@pytest.mark.timeout``, and those taking ``wall_bound()``: a child's
   timeout, a deadline) are raised to the suite's default there, as their
   wall time is mostly others' (tests/niced_timeouts.py).
2. QUIET, alone: the results runner's real runs, which set aside and run
   again any run that other processes disturbed (results/quiet_runs.py),
   and so would run everything again beside phase 1.

Exit 0 only when every phase passed; else the first failing phase's code.
The timed phase prints as it runs, the compute phase when it ends.
"""

import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The results runner's real benchmark runs (its quiet check reruns a run
# others disturbed) and the tests of that check.
QUIET = ('tests/results/test_suite.py', 'tests/results/test_bisect.py',
         'tests/results/test_bisect_real.py', 'tests/results/test_matrix.py',
         'tests/results/test_quiet_runs.py',
         'tests/results/test_noise_sources.py',
         'tests/results/test_power_study.py')
# In-process graphs, tables and scripted runs, and the benchmark scripts
# whose output only is checked: no bound in seconds (a folder, a file or a
# test's node id).
_SCRIPTS = 'tests/test_benchmark_scripts.py::'
COMPUTE = ('tests/models', 'tests/preprocessing', 'tests/results',
           'tests/mutations', 'tests/test_zoo_training.py',
           _SCRIPTS + 'test_performance_script_quick_prints_every_section',
           _SCRIPTS + 'test_convergence_script_quick_runs_both_engines_and_'
           'summarises',
           _SCRIPTS + 'test_dataset_difficulty_script_quick_prints_its_curve',
           _SCRIPTS + 'test_engines_script_prints_each_engine_and_its_ratio_'
           'to_graph')
_PYTEST = [sys.executable, '-m', 'pytest', '-p', 'no:cacheprovider']


def phases(extra, compute=COMPUTE, quiet=QUIET, root='tests'):
  """(name, pytest command, nice) of phase 1's two and phase 2's one."""
  not_quiet = ['--ignore=%s' % path for path in quiet]
  timed = _PYTEST + [root] + [
      ('--deselect=%s' if '::' in path else '--ignore=%s') % path
      for path in list(compute) + list(quiet)] + extra
  # Its wall-clock bounds raised to the suite's default
  # (tests/niced_timeouts.py).
  compute_cmd = (_PYTEST + ['-p', 'tests.niced_timeouts'] + list(compute)
                 + not_quiet + extra)
  quiet_cmd = _PYTEST + list(quiet) + extra
  return ([('timed', timed, 0), ('compute', compute_cmd, 19)],
          ('quiet', quiet_cmd, 0))


def _start(command, nice, stdout, cwd):
  return subprocess.Popen(
      command, cwd=cwd, stdout=stdout, stderr=subprocess.STDOUT,
      preexec_fn=(lambda: os.nice(nice)) if nice else None)


def main(argv, cwd=REPO, **lists):
  """Runs the phases (``lists``: phases()'s compute, quiet and root, for
  a tree other than this one); returns the exit code."""
  together, alone = phases(list(argv), **lists)
  codes = {}
  started = time.monotonic()
  with tempfile.TemporaryFile(mode='w+') as compute_log:
    (timed_name, timed_cmd, _), (compute_name, compute_cmd, nice) = together
    procs = {}
    try:
      procs[compute_name] = _start(compute_cmd, nice, compute_log, cwd)
      procs[timed_name] = _start(timed_cmd, 0, None, cwd)
      codes[timed_name] = procs[timed_name].wait()
      print('== %s phase: exit %d after %.0f s' % (
          timed_name, codes[timed_name], time.monotonic() - started),
            flush=True)
      codes[compute_name] = procs[compute_name].wait()
    finally:
      for proc in procs.values():
        if proc.poll() is None:
          proc.kill()
          proc.wait()
    compute_log.seek(0)
    print('== %s phase (nice %d, beside the timed one): exit %d after %.0f s'
          % (compute_name, nice, codes[compute_name],
             time.monotonic() - started), flush=True)
    sys.stdout.write(compute_log.read())
  name, command, _ = alone
  quiet_start = time.monotonic()
  print('== %s phase, alone:' % name, flush=True)
  codes[name] = subprocess.call(command, cwd=cwd)
  print('== %s phase: exit %d after %.0f s; all phases %.0f s' % (
      name, codes[name], time.monotonic() - quiet_start,
      time.monotonic() - started), flush=True)
  failed = [code for code in codes.values() if code != 0]
  return failed[0] if failed else 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
