"""Evaluation during training, the checkpoint-following evaluator, and
TensorBoard summaries, end to end on generated data."""

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.driver_helpers import REPO, SCRIPT, run_quietly
from tf_cnn_benchmarks.run import evaluation
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags

_LEARN = dict(model='lenet', batch_size=16, num_warmup_batches=0,
              optimizer='sgd', init_learning_rate=0.01, display_every=50,
              eval_batch_size=10, num_eval_batches=3)


def test_schedule_of_evaluations():
  params = flags.make_params(eval_during_training_every_n_steps=4,
                             eval_during_training_at_specified_steps=['3'],
                             eval_during_training_at_specified_epochs=['0.5'])
  # 10 steps an epoch: epoch 0.5 is step 5; the last step (10) always.
  assert evaluation.schedule(params, 10, 10.0) == [3, 4, 5, 8, 10]
  with pytest.raises(flags.UsageError, match='comma-separated list of int'):
    flags.make_params(eval_during_training_at_specified_steps=['x'])
  with pytest.raises(flags.UsageError, match='needs evaluation during'):
    flags.make_params(stop_at_top_1_accuracy=0.5)
  with pytest.raises(flags.UsageError, match='add --eval'):
    flags.make_params(eval_interval_secs=5)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_top_1_rises_during_training_and_the_stop_fires(learnable_shards,
                                                         tmp_path):
  # A small learning rate, so the climb from chance takes a few evaluations.
  result, text = run_quietly(data_dir=learnable_shards, num_batches=400,
                             eval_during_training_every_n_steps=2,
                             stop_at_top_1_accuracy=0.9,
                             result_dir=str(tmp_path),
                             **dict(_LEARN, init_learning_rate=0.002))
  assert result.status == 'ok', text
  assert 'Mode:        training + evaluation\n' in text
  accuracies = [e['top_1_accuracy'] for e in result.evaluations]
  assert len(accuracies) >= 2, text
  # Chance is 1/3: it starts near it and rises until the stop fires.
  assert accuracies[0] < 0.9 <= accuracies[-1], accuracies
  assert result.stopped_at_step == result.evaluations[-1]['step'] < 400
  assert result.times.num_steps == result.stopped_at_step
  assert text.count('Accuracy @ 1 = ') == len(accuracies)
  assert 'Stopping: top-1 accuracy' in text
  assert all(e['num_examples'] == 30 for e in result.evaluations)
  with open(result.record_path) as f:
    summary = json.load(f)['summary']
  assert summary['evaluations'] == result.evaluations
  assert summary['stopped_at_step'] == result.stopped_at_step


def _events(directory):
  from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=g-import-not-at-top
  files = glob.glob(os.path.join(directory, 'events.out.tfevents.*'))
  assert files, os.listdir(directory)
  events = event_accumulator.EventAccumulator(
      directory, size_guidance={event_accumulator.HISTOGRAMS: 0,
                                event_accumulator.SCALARS: 0})
  events.Reload()
  return events


@pytest.mark.parametrize('verbosity', [1, 2, 3])
def test_summaries_by_verbosity(tmp_path, verbosity):
  train_dir = str(tmp_path / 'train')
  result, text = run_quietly(model='trivial', data_name='cifar10',
                             batch_size=4, num_batches=6,
                             summary_verbosity=verbosity,
                             save_summaries_steps=2, train_dir=train_dir)
  assert result.status == 'ok', text
  events = _events(train_dir)
  scalars = set(events.Tags()['scalars'])
  expected = {'total_loss', 'learning_rate', 'images_per_sec'}
  if verbosity >= 2:
    expected.add('gradient_norm')
  assert scalars == expected
  # Every --save_summaries_steps timed steps: steps 2, 4, 6 (global steps
  # count the warm-up step too).
  assert [e.step for e in events.Scalars('total_loss')] == [3, 5, 7]
  assert all(e.value > 0 for e in events.Scalars('images_per_sec'))
  histograms = events.Tags()['histograms']
  if verbosity == 3:
    assert any(t.endswith('/gradient') for t in histograms)
    assert any(not t.endswith('/gradient') for t in histograms)
  else:
    assert not histograms


def test_no_summaries_means_nothing_built_or_written(tmp_path):
  """Verbosity 0 builds no summary op, so its steps run nothing extra."""
  from tf_cnn_benchmarks.run import driver  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.engine_graph import model_graph  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.config import run_config  # pylint: disable=g-import-not-at-top
  kinds = {}
  for verbosity in (0, 3):
    params = flags.make_params(
        model='trivial', data_name='cifar10', device='cpu', batch_size=2,
        result_dir='', train_dir=str(tmp_path), summary_verbosity=verbosity,
        save_summaries_steps=1 if verbosity else 0)
    rc, source = driver.open_input_source(params, run_config.resolve(params))
    built = model_graph.build(rc, source,
                              summary_verbosity=params.summary_verbosity)
    kinds[verbosity] = {op.type for op in built.graph.get_operations()
                        if 'Summary' in op.type}
  assert kinds[0] == set() and 'MergeSummary' in kinds[3]
  train_dir = str(tmp_path / 'quiet')
  result, _ = run_quietly(model='trivial', data_name='cifar10', batch_size=2,
                          num_batches=2, train_dir=train_dir)
  assert result.status == 'ok'
  assert not glob.glob(os.path.join(train_dir, 'events.out.tfevents.*'))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_evaluator_follows_new_checkpoints(learnable_shards, tmp_path):
  """--eval --eval_interval_secs: a separate process evaluates the latest
  checkpoint, then each newer one, and writes accuracies to --eval_dir."""
  train_dir, eval_dir = str(tmp_path / 'train'), str(tmp_path / 'eval')
  common = dict(_LEARN, data_dir=learnable_shards, train_dir=train_dir)
  first, text = run_quietly(num_batches=10, **common)
  assert first.status == 'ok', text
  args = [sys.executable, SCRIPT, '--eval', '--eval_interval_secs=1',
          '--model=lenet', '--data_dir=%s' % learnable_shards,
          '--train_dir=%s' % train_dir, '--eval_dir=%s' % eval_dir,
          '--summary_verbosity=1', '--eval_batch_size=10',
          '--num_batches=3', '--num_warmup_batches=0', '--device=cpu',
          '--result_dir=%s' % tmp_path]
  evaluator = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
  try:
    out = ''
    deadline = time.monotonic() + 240
    while 'Following ' not in out and time.monotonic() < deadline:
      out += evaluator.stdout.readline()
    assert 'Following ' in out, out
    second, text = run_quietly(num_batches=10, **common)  # resumes: step 20
    assert second.status == 'ok', text
    while out.count('Accuracy @ 1 = ') < 2 and time.monotonic() < deadline:
      out += evaluator.stdout.readline()
    assert out.count('Accuracy @ 1 = ') == 2, out
  finally:
    evaluator.send_signal(signal.SIGTERM)
    rest, _ = evaluator.communicate(timeout=60)
  out += rest
  assert evaluator.returncode == exit_codes.INTERRUPTED, out
  record_path = out.split('Run record: ')[-1].split()[0]
  with open(record_path) as f:
    evaluations = json.load(f)['summary']['evaluations']
  assert [e['global_step'] for e in evaluations] == [10, 20]
  events = _events(eval_dir)
  assert [e.step for e in events.Scalars('eval/top_1_accuracy')] == [10, 20]
