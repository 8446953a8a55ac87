"""benchmarks/vs_original.py: ours vs the original tool, side by side.

The fast tests check the parts that decide what a comparison says (reading
rates, pairing, medians, failures reported without stopping the rest)
with stand-in runs. The slow one runs the script for real on one single
process and one loopback cluster when a checkout of the original and an
interpreter for it are at hand (TF_CNN_BENCHMARKS_ORIGINAL_DIR,
TF_CNN_BENCHMARKS_ORIGINAL_PYTHON); like tests/test_benchmark_scripts.py
it checks what is printed, never a speed.
"""

import os
import re
import subprocess
import sys

import pytest

from tests import tools

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'benchmarks'))

import original_tool  # pylint: disable=g-import-not-at-top,wrong-import-position
import subprocess_runs  # pylint: disable=g-import-not-at-top,wrong-import-position
import vs_original  # pylint: disable=g-import-not-at-top,wrong-import-position

SCRIPT = os.path.join(REPO, 'benchmarks', 'vs_original.py')


def test_total_rates_reads_single_and_prefixed_lines_not_the_cluster_sum():
  text = ('Step\tImg/sec\ttotal_loss\n'
          '----\ntotal images/sec: 12.50\n----\n'
          '[worker0] total images/sec: 30.0\n'
          '[worker1] total images/sec: 10\n'
          '[worker1] total images/sec: 32.25\n'  # the last one counts
          '[ps0] Running parameter server 0\n'
          'Cluster total images/sec: 62.25 (sum of the 2 workers\' own rates)\n'
          'Cluster total images/sec: 62.25\n')
  assert subprocess_runs.total_rates(text) == {
      '': 12.5, 'worker0': 30.0, 'worker1': 32.25}


def test_rate_of_a_cluster_is_the_mean_of_its_workers_and_needs_them_all():
  text = ('[worker0] total images/sec: 30.0\n'
          '[worker1] total images/sec: 34.0\n')
  assert vs_original.rate_of(text, 2) == 32.0
  with pytest.raises(subprocess_runs.RunFailed, match='worker2'):
    vs_original.rate_of(text, 3)
  with pytest.raises(subprocess_runs.RunFailed, match='the process'):
    vs_original.rate_of(text, 0)
  assert vs_original.rate_of('total images/sec: 7.5\n', 0) == 7.5


def test_pairs_alternate_which_tool_goes_first():
  sides = ('ours', 'original')
  assert [vs_original.pair_order(i, sides)[0] for i in range(4)] == [
      'ours', 'original', 'ours', 'original']


def _run(side, rate=None, error=None):
  return vs_original.Run(side, rate=rate, error=error)


def test_summary_is_the_median_of_pair_ratios_over_pairs_where_both_ran():
  sides = ('ours', 'original')
  pairs = [{'ours': _run('ours', 10.0), 'original': _run('original', 5.0)},
           {'ours': _run('ours', 9.0), 'original': _run('original', 10.0)},
           {'ours': _run('ours', 12.0), 'original': _run('original', 10.0)},
           {'ours': _run('ours', error='boom'),
            'original': _run('original', 1.0)}]
  s = vs_original.summarize(pairs, sides)
  # Ratios 2.0, 0.9, 1.2: the median pair ratio, not a ratio of medians.
  assert s['ratio'] == pytest.approx(1.2)
  assert (s['pairs'], s['good_pairs']) == (4, 3)
  assert s['ours'] == 10.0 and s['original'] == pytest.approx(7.5)
  assert (s['ours_failed'], s['original_failed']) == (1, 0)
  line = vs_original.summary_line('trivial', sides, s)
  assert 'ours/original = 1.200x' in line and 'ours failed 1 of 4' in line


def test_a_failed_run_is_reported_and_the_comparison_goes_on():
  printed = []
  comparison = vs_original.Comparison(printed.append)
  calls_made = []

  def ours():
    calls_made.append('ours')
    return 'total images/sec: 20.0\n', 0.01

  def original():
    calls_made.append('original')
    if len(calls_made) <= 2:
      raise subprocess_runs.RunFailed(
          'python tf_cnn_benchmarks.py --model=trivial\nexit code 1\n' +
          '\n'.join('noise %d' % i for i in range(50)) +
          '\nValueError: the last words')
    return 'total images/sec: 10.0\n', 0.02

  s = comparison.run('trivial', ('ours', 'original'),
                     {'ours': ours, 'original': original},
                     {'ours': 0, 'original': 0}, 2)
  assert calls_made == ['ours', 'original', 'original', 'ours']
  assert s['ratio'] == 2.0 and s['original_failed'] == 1
  text = '\n'.join(printed)
  assert re.search(r'1 +ours +20\.00 +FAILED', text), text
  assert re.search(r'2 +original +20\.00 +10\.00 +2\.000x', text), text
  comparison.report_failures()
  text = '\n'.join(printed)
  assert '-- trivial, original, pair 1:' in text
  # The command, its exit code and the last lines of its output, not all.
  assert 'python tf_cnn_benchmarks.py --model=trivial\n   exit code 1' in text
  assert 'ValueError: the last words' in text
  assert 'noise 0\n' not in text


def test_every_configuration_gives_both_tools_the_same_cpu_flags():
  args, extra = vs_original.parse_args(['--quick', '--use_fp16'])
  configs = vs_original.all_configs(args, extra)
  assert {'trivial', 'resnet50', 'inception3', 'vgg16', 'alexnet',
          'googlenet', 'ps_sync', 'ps_async', 'dist_replicated',
          'real_trivial', 'real_resnet50'} <= set(configs)
  for config in configs.values():
    assert '--device=cpu' in config.flags
    assert '--data_format=NHWC' in config.flags
    assert '--num_batches=3' in config.flags and '--use_fp16' in config.flags
  assert configs['ps_async'].workers == 2
  assert '--cross_replica_sync=False' in configs['ps_async'].flags
  assert configs['real_resnet50'].real_data
  assert args.pairs == 1
  # Ours against ours: each side's own flags on the same configuration.
  runner = subprocess_runs.Runner(max_other_share=None)
  sides, calls = vs_original.sides_and_calls(configs['malloc_cost'], runner,
                                             None, 60)
  assert sides == ('untuned', 'tuned') and set(calls) == set(sides)
  assert configs['malloc_cost'].ours_sides == (
      ('untuned', ('--tune_malloc=false',)), ('tuned', ()))
  assert configs['malloc_cost'].ours_flags == ('--sync_updates=barrier',)
  assert dict(configs['sync_cost'].ours_sides)['barrier'] == (
      '--sync_updates=barrier',)


def test_unknown_configuration_is_a_usage_error(capsys):
  assert vs_original.main(['--configs=trivial,resnet99']) == 2
  err = capsys.readouterr().err
  assert 'resnet99' in err and 'ps_sync' in err


def test_missing_checkout_says_how_to_point_at_one(tmp_path):
  assert original_tool.DIR_ENV in original_tool.problem(None, sys.executable)
  why = original_tool.problem(str(tmp_path), sys.executable)
  assert 'not a checkout' in why and 'scripts/' in why
  script = tmp_path / original_tool.SCRIPT_IN_CHECKOUT
  script.parent.mkdir(parents=True)
  script.write_text('')
  why = original_tool.problem(str(tmp_path), str(tmp_path / 'no-python'))
  assert 'does not exist' in why and 'tf-keras' in why


def test_original_cluster_tasks_get_the_same_flags_and_their_own_roles():
  ps, workers = original_tool.cluster_addresses(1, 2)
  assert len(set(ps + workers)) == 3
  assert all(a.startswith('127.0.0.1:') for a in ps + workers)
  tasks = original_tool.task_argvs('py', 'orig.py', ['--model=trivial'], ps,
                                   workers)
  assert [label for label, _ in tasks] == ['ps0', 'worker0', 'worker1']
  for label, argv in tasks:
    assert argv[:3] == ['py', 'orig.py', '--model=trivial']
    assert '--ps_hosts=' + ps[0] in argv
    assert '--worker_hosts=' + ','.join(workers) in argv
  assert tasks[2][1][-2:] == ['--job_name=worker', '--task_index=1']
  # Worker output gets our launcher's task prefix, so one parser reads both.
  text = original_tool.prefixed('worker1', 'a\ntotal images/sec: 3.5\n')
  assert subprocess_runs.total_rates(text) == {'worker1': 3.5}


def _original_or_skip():
  checkout = original_tool.default_dir()
  python = original_tool.default_python()
  # A plain skip, also in CI: the original's source is on GitHub, which
  # CI's network does not reach, and no package registry has it. The
  # side-by-side runs by hand (PERFORMANCE.md); this test runs wherever a
  # checkout is configured.
  install = ('clone tensorflow/benchmarks, make its venv as PERFORMANCE.md '
             'says, and set %s and %s' % (original_tool.DIR_ENV,
                                          original_tool.PYTHON_ENV))
  if not checkout:
    pytest.skip('no checkout of the original tool (%s is not set; its '
                'interpreter, %s, defaults to %s); to run this test: %s' % (
                    original_tool.DIR_ENV, original_tool.PYTHON_ENV,
                    original_tool.DEFAULT_PYTHON, install))
  why = original_tool.problem(checkout, python)
  if why:
    # Configured but broken: that is a failure to fix, in CI too.
    tools.unavailable('the original cannot run here (%s, %s): %s' % (
        original_tool.DIR_ENV, original_tool.PYTHON_ENV, why), install)


@pytest.mark.slow
@pytest.mark.cluster
def test_quick_comparison_of_one_process_and_one_cluster(tmp_path):
  _original_or_skip()
  out = subprocess.run(
      [sys.executable, SCRIPT, '--quick', '--configs=trivial,ps_sync',
       '--max_other_share=-1', '--run_timeout=600',
       '--result_dir=%s' % tmp_path],
      cwd=REPO, capture_output=True, text=True, timeout=1500)
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  text = out.stdout
  # One pair row under each configuration's header, both rates read.
  assert len(re.findall(r'^ +1 +ours +[\d.]+ +[\d.]+ +[\d.]+x', text,
                        re.M)) == 2, text
  for config in ('trivial', 'ps_sync'):
    assert re.search(r'^%s: ours/original = [\d.]+x \(median of 1 pair' %
                     config, text, re.M), text
    assert re.search(r'^%s +1/1 +[\d.]+ +[\d.]+ +[\d.]+x' % config, text,
                     re.M), text
  assert 'failed runs' not in text


def test_scaling_compares_n_workers_with_one_process_at_n_times_the_batch():
  args, extra = vs_original.parse_args(['--scaling', '--batch_size=4'])
  assert vs_original.check_scaling_args(args)  # needs the original too
  configs = vs_original.scaling_configs(args, extra)
  names = [(c.name, s.name) for c, s in configs]
  assert names == [('trivial_x1', 'trivial_batch32'),
                   ('trivial_x2', 'trivial_batch64'),
                   ('trivial_x4', 'trivial_batch128'),
                   ('resnet50_x1', 'resnet50_batch4'),
                   ('resnet50_x2', 'resnet50_batch8'),
                   ('resnet50_x4', 'resnet50_batch16')]
  cluster, single = configs[5]
  assert cluster.workers == 4 and single.workers == 0
  assert '--batch_size=4' in cluster.flags
  assert '--batch_size=16' in single.flags
  assert '--variable_update=parameter_server' in cluster.flags
  args, _ = vs_original.parse_args(['--scaling', '--scaling_tools=ours'])
  assert not vs_original.check_scaling_args(args)
  for bad in ('--scaling_workers=0,2', '--scaling_tools=keras',
              '--scaling_models=resnet99'):
    args, _ = vs_original.parse_args(['--scaling', bad])
    with pytest.raises(vs_original.UsageError):
      vs_original.check_scaling_args(args)
