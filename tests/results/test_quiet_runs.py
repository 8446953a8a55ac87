"""The runner's low-noise settings (results/quiet_runs.py), on the fake
benchmark: pinned CPUs and threads, calibrated length, disturbed runs set
aside and run again, and the balanced order."""

import io
import os

import pytest

from results import comparison
from results import quiet_runs
from results import runner
from results import store
from tests.results.test_suite import FAKE_BENCHMARK, _suite


def _commands(result_dir):
  logs = os.path.join(result_dir, 'logs')
  return [open(os.path.join(logs, name)).readline()
          for name in sorted(os.listdir(logs))]


def test_two_sides_take_turns_in_a_balanced_order():
  plans = [['a%d' % i for i in range(4)], ['b%d' % i for i in range(4)]]
  assert runner.interleave(plans) == ['a0', 'b0', 'b1', 'a1', 'a2', 'b2',
                                      'b3', 'a3']


def test_the_order_alternates_on_from_the_rounds_already_run():
  """bisect's top-up after 7 rounds goes on B A, not A B twice."""
  plans = [['a%d' % i for i in range(3)], ['b%d' % i for i in range(3)]]
  assert runner.interleave(plans, first_round=7) == ['b0', 'a0', 'a1', 'b1',
                                                     'b2', 'a2']
  assert runner.interleave(plans, first_round=6) == runner.interleave(plans)


def test_runs_are_pinned_to_the_cpu_set_with_as_many_threads(tmp_path,
                                                             capsys):
  cpus = sorted(os.sched_getaffinity(0))[:1]
  code, out = _suite(['--result_dir', tmp_path, '--repeat', '2', '--cpus',
                      str(cpus[0]), '--benchmark_script', FAKE_BENCHMARK,
                      '--', '--model=trivial'], capsys)
  assert code == 0, out
  frame = store.load_runs([tmp_path])
  assert [list(a) for a in frame['environment.cpu_affinity']] == [cpus] * 2
  for command in _commands(tmp_path):
    assert '--num_intra_threads=1 --num_inter_threads=1' in command, command


def test_flags_that_set_threads_win(tmp_path, capsys):
  code, out = _suite(['--result_dir', tmp_path, '--benchmark_script',
                      FAKE_BENCHMARK, '--', '--model=trivial',
                      '--num_intra_threads=3'], capsys)
  assert code == 0, out
  (command,) = _commands(tmp_path)
  assert '--num_intra_threads=3' in command
  assert command.count('--num_intra_threads') == 1


def test_runs_keep_the_system_allocator(tmp_path, capsys, monkeypatch):
  """README (noise sources): preloading tcmalloc or jemalloc did not cut
  the spread, and a preloaded allocator could hide an allocator change a
  comparison is meant to see, so the runner preloads nothing."""
  monkeypatch.delenv('LD_PRELOAD', raising=False)
  code, out = _suite(['--result_dir', tmp_path, '--repeat', '2',
                      '--target_seconds', '0.2', '--benchmark_script',
                      FAKE_BENCHMARK, '--', '--model=trivial'], capsys)
  assert code == 0, out
  logs = os.path.join(tmp_path, 'logs')
  texts = [open(os.path.join(logs, name)).read()
           for name in sorted(os.listdir(logs))]
  assert len(texts) == 2
  for text in texts:
    assert 'preloaded: nothing\n' in text, text


def test_the_run_length_is_calibrated_to_the_target(tmp_path, capsys):
  """The fake's steps take 0.01 s: 0.5 s of them is 50 steps; the
  calibration run's record is not among the results."""
  code, out = _suite(['--result_dir', tmp_path, '--repeat', '3',
                      '--target_seconds', '0.5', '--benchmark_script',
                      FAKE_BENCHMARK, '--', '--model=trivial'], capsys)
  assert code == 0, out
  assert 'calibration of model=trivial: 0.0100 s a step, so ' \
      '--num_batches=50 for 0.5 s' in out.out
  assert len(store.find_record_files(str(tmp_path))) == 3
  commands = _commands(tmp_path)
  assert len(commands) == 3
  assert all('--num_batches=50' in command for command in commands)


def test_a_run_of_its_own_length_is_calibrated_to_it_alone(tmp_path):
  """studies/noise_sources.py's runs_2x: a run's own target_seconds (1 s:
  100 of the fake's 0.01 s steps) for it, the runner's (0.5 s: 50) for the
  runs after it."""
  def run(name, label, target=None):
    return runner.PlannedRun(name, ['--model=trivial'], label, 1, 1,
                             target_seconds=target)
  stream = io.StringIO()
  outcomes = runner.run_all(
      [run('long', 'a', 1.0), run('short', 'a'), run('long', 'b', 1.0),
       run('short', 'b')], str(tmp_path), benchmark_script=FAKE_BENCHMARK,
      stream=stream, noise=quiet_runs.NoiseControl(target_seconds=0.5))
  assert all(outcome.ok for outcome in outcomes), stream.getvalue()
  commands = _commands(tmp_path)
  assert len(commands) == 4
  # The logs sort in the order the runs ran: long, short, long, short.
  lengths = [c.split('--num_batches=')[1].split()[0] for c in commands]
  assert lengths == ['100', '50', '100', '50'], commands
  assert 'so --num_batches=100 for 1 s' in stream.getvalue()
  assert 'so --num_batches=50 for 0.5 s' in stream.getvalue()


def test_flags_that_set_the_length_are_not_calibrated(tmp_path, capsys):
  code, out = _suite(['--result_dir', tmp_path, '--target_seconds', '0.5',
                      '--repeat', '2', '--benchmark_script', FAKE_BENCHMARK,
                      '--', '--model=trivial', '--num_batches=7'], capsys)
  assert code == 0, out
  # Said once, not silently (a suite file's num_batches wins too).
  assert out.out.count('calibration of model=trivial num_batches=7: none, its '
                       'flags set '
                       '--num_batches (which wins over --target_seconds)'
                       ) == 1, out.out
  commands = _commands(tmp_path)
  assert len(commands) == 2
  assert all(c.count('--num_batches') == 1 and '--num_batches=7' in c
             for c in commands), commands


def test_a_disturbed_run_is_set_aside_and_run_again(tmp_path, capsys,
                                                    monkeypatch):
  monkeypatch.setenv('TF_CNN_BENCHMARKS_TEST_FAKE_BUSY_ONCE',
                     str(tmp_path / 'busy'))
  result_dir = tmp_path / 'runs'
  code, out = _suite(['--result_dir', result_dir, '--repeat', '2',
                      '--benchmark_script', FAKE_BENCHMARK, '--',
                      '--model=trivial'], capsys)
  assert code == 0, out
  assert ('other processes used 50% of the CPU during its timed loop; set '
          'aside, running it again') in out.out
  assert '(run 2 times: the machine was busy)' in out.out
  assert '1 run(s) were run again' in out.out
  assert len(store.find_record_files(str(result_dir))) == 2
  aside = os.listdir(result_dir / quiet_runs.DISTURBED_FOLDER)
  assert len(aside) == 1


@pytest.mark.parametrize('args,words', [
    (['--cpus', 'x'], 'is not a CPU list'),
    (['--cpus', '4096'], 'may run on CPUs'),
    (['--target_seconds', '0'], 'must be positive'),
    (['--max_other_cpu_share', '2'], 'between 0 and 1')])
def test_bad_noise_options_are_usage_errors(tmp_path, capsys, args, words):
  try:
    code, out = _suite(['--result_dir', tmp_path] + args + [
        '--benchmark_script', FAKE_BENCHMARK, '--', '--model=trivial'],
                       capsys)
  except SystemExit as e:  # argparse's own refusal
    code, out = e.code, capsys.readouterr()
  assert code == 2 and words in out.err, out


def test_parse_cpus():
  assert quiet_runs.parse_cpus('0-2,5') == (0, 1, 2, 5)
  with pytest.raises(ValueError):
    quiet_runs.parse_cpus('a')


def test_a_run_still_disturbed_after_its_last_try_is_kept_and_named(
    tmp_path, capsys, monkeypatch):
  """The bound holds (max_reruns tries more, then the run is kept), the
  report counts runs and tries apart, and compare names the kept run."""
  quiet = tmp_path / 'quiet'
  code, out = _suite(['--result_dir', quiet, '--repeat', '2', '--label', 'A',
                      '--benchmark_script', FAKE_BENCHMARK, '--',
                      '--model=trivial'], capsys)
  assert code == 0, out
  monkeypatch.setenv('TF_CNN_BENCHMARKS_TEST_FAKE_BUSY', '1')
  busy = tmp_path / 'busy'
  code, out = _suite(['--result_dir', busy, '--repeat', '2', '--label', 'B',
                      '--max_reruns', '2', '--benchmark_script',
                      FAKE_BENCHMARK, '--', '--model=trivial'], capsys)
  assert code == 0, out
  assert out.out.count('(run 3 times: the machine was busy) (kept though '
                       'other processes used 50% of the CPU during its timed '
                       'loop)') == 2, out.out
  assert ('2 run(s) were run again (tries set aside in all: 4) because other '
          'processes used more of the CPU than allowed') in out.out, out.out
  assert '2 still were after the last try (kept: compare names them)' in (
      out.out)
  assert len(store.find_record_files(str(busy))) == 2
  assert len(os.listdir(busy / quiet_runs.DISTURBED_FOLDER)) == 4
  frame = store.load_runs([str(quiet), str(busy)])
  (row,) = comparison.compare_groups(frame, 'label', 'A', 'B').rows
  assert ('candidate: 2 of 2 runs shared the CPU (other processes took over '
          '10% of it during the timed loop)') in row.note, row.note
  assert 'baseline:' not in row.note, row.note
