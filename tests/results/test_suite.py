"""`tf_cnn_benchmarks suite`: suite files, the runner, and real runs."""

import os

import pytest

from results import runner
from results import store
from results import suite
from results import suite_file
from results.errors import UsageError

FAKE_BENCHMARK = os.path.join(os.path.dirname(__file__), 'fake_benchmark.py')

SUITE_TOML = """
repeat = 2
label = "nightly"
[defaults]
num_batches = 5
[[config]]
name = "small"
model = "trivial"
batch_size = 16
[[config]]
model = "trivial"
batch_size = 64
use_fp16 = false
repeat = 1
"""


def test_parse_suite():
  configs = suite_file.parse_suite(SUITE_TOML)
  assert [c.name for c in configs] == ['small',
                                       'model=trivial batch_size=64 use_fp16=false']
  assert configs[0].flag_args == ['--num_batches=5', '--model=trivial',
                                  '--batch_size=16']
  assert configs[1].flag_args[-1] == '--use_fp16=false'
  assert [c.repeat for c in configs] == [2, 1]
  assert configs[0].label == 'nightly'
  assert suite_file.format_flag('gpu_indices', [0, 1]) == '--gpu_indices=0,1'


@pytest.mark.parametrize('text, message', [
    ('repeat = 2', 'declares no configuration'),
    ('model = "trivial"\n[[config]]\nmodel="x"', 'unknown top-level key'),
    ('[[config]]\nresult_dir = "x"', 'the suite command sets itself'),
    ('[[config]]\nmodel = "x"\nrepeat = 0', 'whole number >= 1'),
    ('[[config]]\nmodel = {a = 1}', 'not a string, number'),
    ('[[config]\n', 'not valid TOML'),
])
def test_bad_suite_files(text, message):
  with pytest.raises(UsageError, match=message):
    suite_file.parse_suite(text)


def _suite(argv, capsys):
  code = suite.main(['suite'] + [str(a) for a in argv])
  return code, capsys.readouterr()


def test_suite_runs_every_config_and_repeat(tmp_path, capsys):
  suite_path = tmp_path / 'suite.toml'
  suite_path.write_text(SUITE_TOML)
  result_dir = tmp_path / 'runs'
  code, out = _suite([suite_path, '--result_dir', result_dir,
                      '--benchmark_script', FAKE_BENCHMARK], capsys)
  assert code == 0, out.out + out.err
  progress = [line for line in out.out.splitlines() if line.startswith('[')]
  assert len(progress) == 3
  # In rounds: repeat 1 of every configuration, then repeat 2.
  assert progress[0].startswith(
      '[1/3] small (1/2) nightly: ok 1600.0 images/sec in ')
  assert progress[1].startswith(
      '[2/3] model=trivial batch_size=64 use_fp16=false (1/1) nightly: ok')
  assert progress[2].startswith('[3/3] small (2/2) nightly: ok')
  assert '3 of 3 runs succeeded' in out.out
  frame = store.load_runs([result_dir])
  assert sorted(frame['config.batch_size_per_device']) == [16, 16, 64]
  assert set(frame['label']) == {'nightly'}
  assert len(os.listdir(result_dir / 'logs')) == 3


def test_failures_do_not_stop_the_suite(tmp_path, capsys):
  suite_path = tmp_path / 'suite.toml'
  suite_path.write_text('\n'.join([
      'repeat = 1',
      '[[config]]', 'model = "fail"',
      '[[config]]', 'model = "failed_record"',
      '[[config]]', 'model = "norecord"',
      '[[config]]', 'model = "trivial"',
  ]))
  code, out = _suite([suite_path, '--result_dir', tmp_path / 'runs',
                      '--label', 'x', '--benchmark_script', FAKE_BENCHMARK],
                     capsys)
  assert code == suite.EXIT_RUN_FAILED
  text = out.out
  assert 'FAILED exit code 3: Run failed: simulated crash' in text
  assert 'FAILED exit code 1' in text
  assert 'exited 0 but wrote no run record' in text
  assert '[4/4] model=trivial (1/1) x: ok' in text
  assert '1 of 4 runs succeeded' in text
  assert text.count('\n  model=') == 3   # the closing list of failures


def test_timeout(tmp_path, capsys):
  code, out = _suite(['--result_dir', tmp_path, '--timeout', '1',
                      '--benchmark_script', FAKE_BENCHMARK, '--',
                      '--model=sleep'], capsys)
  assert code == 1 and 'timed out after 1 s' in out.out


def test_adhoc_configuration_with_repeat(tmp_path, capsys):
  code, out = _suite(['--result_dir', tmp_path, '--repeat', '3',
                      '--benchmark_script', FAKE_BENCHMARK, '--',
                      '--model=lenet', '--batch_size=8'], capsys)
  assert code == 0, out.out
  assert '[3/3] model=lenet batch_size=8 (3/3): ok 800.0 images/sec' in out.out
  assert len(store.load_runs([tmp_path])) == 3


def test_dry_run_prints_commands(tmp_path, capsys):
  code, out = _suite(['--result_dir', tmp_path, '--repeat', '2', '--label',
                      'L', '--dry_run', '--', '--model=trivial'], capsys)
  assert code == 0
  commands = [l for l in out.out.splitlines() if 'tf_cnn_benchmarks.py' in l]
  assert len(commands) == 2
  assert commands[0].endswith('--model=trivial --result_dir=%s --label=L'
                              % tmp_path)
  assert not os.listdir(tmp_path)


def test_a_launch_table_runs_the_configuration_as_a_local_cluster(tmp_path):
  configs = suite_file.parse_suite('\n'.join([
      '[defaults]', 'num_batches = 5',
      '[[config]]', 'model = "trivial"', 'launch = {ps = 1, workers = 2}',
      '[[config]]', 'model = "lenet"']))
  assert configs[0].launch_args == ['--ps=1', '--workers=2']
  assert configs[0].name == 'ps=1 workers=2 model=trivial'
  assert configs[1].launch_args == []
  runs = runner.plan_runs(configs, 1, 'L', '/venv/python')
  assert runner.build_command(runs[0], 'py', 'tf_cnn_benchmarks.py', 'D') == [
      '/venv/python', 'tf_cnn_benchmarks.py', 'launch', '--ps=1',
      '--workers=2', '--', '--num_batches=5', '--model=trivial',
      '--result_dir=D', '--label=L']
  assert runner.build_command(runs[1], 'py', 'tf_cnn_benchmarks.py', 'D') == [
      '/venv/python', 'tf_cnn_benchmarks.py', '--num_batches=5',
      '--model=lenet', '--result_dir=D', '--label=L']
  with pytest.raises(UsageError, match='table of `tf_cnn_benchmarks launch`'):
    suite_file.parse_suite('[[config]]\nmodel = "x"\nlaunch = "--ps 1"')


@pytest.mark.parametrize('option', [
    'ssh_option = "ProxyCommand=touch /tmp/x"', 'hosts = "-oProxyCommand=x"',
    'remote_python = "/bin/sh"', 'ssh_config = "/tmp/evil_config"'])
def test_a_launch_table_admits_only_the_local_cluster_options(option):
  """A suite file is data (shared, checked in): its launch table may size a
  local cluster, never choose what ssh runs or where."""
  with pytest.raises(UsageError) as info:
    suite_file.parse_suite('[[config]]\nmodel = "x"\nlaunch = {ps = 1, %s}'
                           % option)
  message = str(info.value)
  assert ("launch table sets %r, which a suite file may not" %
          option.split(' ')[0]) in message, message
  assert 'ps, workers, ps_exit_grace, timeout' in message, message


def test_quick_suite_covers_what_the_version_table_needs():
  """README's version table: trivial, replicated resnet20, a local cluster."""
  configs = suite_file.load_suite(os.path.join(
      os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
      'examples', 'cpu_quick_suite.toml'))
  flags = [' '.join(c.flag_args) for c in configs]
  assert any('--model=trivial' in f and not c.launch_args
             for f, c in zip(flags, configs))
  assert any('--model=resnet20' in f and '--variable_update=replicated' in f
             and '--num_gpus=2' in f for f in flags)
  assert any(c.launch_args for c in configs)


def test_every_example_suite_loads():
  examples = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
      __file__))), 'examples')
  names = sorted(n for n in os.listdir(examples) if n.endswith('.toml'))
  assert 'dashboard_suite.toml' in names
  for name in names:
    assert suite_file.load_suite(os.path.join(examples, name))


@pytest.mark.parametrize('argv, message', [
    ([], 'nothing to run'),
    (['{d}/missing.toml'], 'does not exist'),
    (['--repeat', '0', '--', '--model=x'], '--repeat must be at least 1'),
    (['--', 'model=x'], 'only benchmark flags'),
    (['--', '--result_dir=x'], 'pass --result_dir before'),
])
def test_bad_input(tmp_path, capsys, argv, message):
  argv = [a.replace('{d}', str(tmp_path)) for a in argv]
  code, out = _suite(argv + ['--result_dir', tmp_path] if '--' not in argv
                     else ['--result_dir', tmp_path] + argv, capsys)
  assert code == 2
  assert message in out.err.replace('\n', ' ')


@pytest.mark.slow   # 4 TensorFlow processes: ~50 s idle, ~100 s on a busy box
def test_real_suite_with_the_trivial_model(tmp_path, capsys):
  """2 configurations x 2 repeats of the real benchmark, each a new process."""
  suite_path = tmp_path / 'suite.toml'
  suite_path.write_text('\n'.join([
      'repeat = 2', 'label = "real"',
      '[defaults]', 'model = "trivial"', 'num_batches = 3',
      'num_warmup_batches = 1', 'device = "cpu"',
      '[[config]]', 'batch_size = 8',
      '[[config]]', 'batch_size = 16',
  ]))
  result_dir = tmp_path / 'runs'
  code, out = _suite([suite_path, '--result_dir', result_dir, '--timeout',
                      '300'], capsys)
  assert code == 0, out.out
  assert out.out.count(': ok ') == 4
  frame = store.load_runs([result_dir])
  assert len(frame) == 4 and set(frame['status']) == {'ok'}
  assert sorted(frame['config.batch_size_per_device']) == [8, 8, 16, 16]
  assert set(frame['label']) == {'real'}
  assert len(set(frame['run_id'])) == 4     # four separate processes
  assert all(len(steps) == 3 for steps in frame['timing.step_times_sec'])


def test_two_suites_writing_one_folder_credit_each_run_its_own_record(
    tmp_path):
  """Two runners share a result folder at the same time (two suites, or a
  suite beside a matrix): each run is credited with the record it wrote,
  never with the other's, though both land in the one folder."""
  import threading  # pylint: disable=g-import-not-at-top
  result_dir = str(tmp_path / 'runs')
  outcomes = {}

  def one(label, batch):
    configs = [suite_file.adhoc_config(['--model=trivial',
                                        '--batch_size=%d' % batch], 3)]
    plan = runner.plan_runs(configs, label_override=label)
    outcomes[label] = runner.run_all(plan, result_dir,
                                     benchmark_script=FAKE_BENCHMARK,
                                     stream=open(os.devnull, 'w'))
  threads = [threading.Thread(target=one, args=args)
             for args in (('a', 16), ('b', 64))]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join()
  for label, batch in (('a', 16), ('b', 64)):
    for outcome in outcomes[label]:
      assert outcome.ok, outcome.failure
      assert len(outcome.record_paths) == 1, outcome.record_paths
      assert outcome.images_per_sec == pytest.approx(batch / 0.01)
  assert len(store.find_record_files(result_dir)) == 6


@pytest.mark.timeout(120)
@pytest.mark.parametrize('signame', ['SIGTERM', 'SIGHUP'])
def test_a_stopped_suite_stops_its_benchmark(tmp_path, signame):
  """SIGTERM/SIGHUP to `suite`: the benchmark under way (in a session of
  its own, so no terminal signal reaches it) is stopped, not orphaned,
  and the suite exits as interrupted."""
  import signal  # pylint: disable=g-import-not-at-top
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  import psutil  # pylint: disable=g-import-not-at-top
  from tests.driver_helpers import REPO  # pylint: disable=g-import-not-at-top
  result_dir = str(tmp_path / 'runs')
  proc = subprocess.Popen(
      [sys.executable, os.path.join(REPO, 'tf_cnn_benchmarks.py'), 'suite',
       '--result_dir', result_dir, '--benchmark_script', FAKE_BENCHMARK,
       '--', '--model=sleep'], stdout=subprocess.PIPE, text=True)
  deadline = time.monotonic() + 60
  sleeper = []
  while not sleeper and time.monotonic() < deadline:
    sleeper = [p for p in psutil.process_iter(['cmdline'])
               if (p.info['cmdline'] or [None, None])[1:2] == [FAKE_BENCHMARK]
               and result_dir in ' '.join(p.info['cmdline'])]
    time.sleep(0.1)
  assert sleeper, 'the benchmark never started'
  proc.send_signal(getattr(signal, signame))
  out, _ = proc.communicate(timeout=60)
  assert proc.returncode == suite.EXIT_INTERRUPTED, out
  assert 'interrupted' in out
  psutil.wait_procs(sleeper, timeout=5)
  assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE
                 for p in sleeper), 'the benchmark was left running'


def test_a_stop_signal_inside_popen_is_acted_on_once_popen_returns():
  """Between the benchmark's start and Popen's return the runner holds no
  handle on it: a signal there is deferred, then raised (so the run is
  stopped, not orphaned)."""
  import signal  # pylint: disable=g-import-not-at-top
  with runner._signals_interrupt():  # pylint: disable=protected-access
    with runner._stop_deferred():  # pylint: disable=protected-access
      os.kill(os.getpid(), signal.SIGTERM)  # handled here: deferred
    with pytest.raises(KeyboardInterrupt, match='SIGTERM'):
      runner._raise_deferred_stop()  # pylint: disable=protected-access
    runner._raise_deferred_stop()  # once only  # pylint: disable=protected-access


def test_a_run_short_of_its_target_is_a_run_not_a_failure(tmp_path,
                                                          capsys):
  """Exit 5 (target_not_reached): it trained and measured; a suite of
  convergence runs counts it, and compare leaves out its time."""
  code, out = _suite(['--result_dir', tmp_path, '--benchmark_script',
                      FAKE_BENCHMARK, '--', '--model=short_of_target'],
                     capsys)
  assert code == 0, out
  assert '1 of 1 runs succeeded' in out.out
