"""--ml_perf_compliance_logging: a resnet training run's :::MLLOG lines,
checked by the mlperf-logging package's own compliance checker; and what
the checker's closed division asks that this harness cannot give (README,
"MLPerf logs")."""

import collections
import io
import os
import re

import pytest

from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flags
from tf_cnn_benchmarks.engine_tf2 import engine as tf2_engine
from tf_cnn_benchmarks.run import mlperf_log
from tf_cnn_benchmarks.run import report
from tests.driver_helpers import run_quietly

# The package's own checker (setup.cfg's test extra installs it).
from mlperf_logging.compliance_checker import mlp_compliance as checker  # pylint: disable=g-import-not-at-top,wrong-import-position

# The closed division's rules this harness cannot meet, by the key the
# checker names (README lists each with why): the polynomial learning-rate
# decay of MLPerf's resnet reference (the original's schedule flags are
# piecewise and exponential only), and the target, 75.9% top-1 on
# ImageNet.
CLOSED_ONLY = {'sgd_opt_end_learning_rate',
               'sgd_opt_learning_rate_decay_poly_power',
               'sgd_opt_learning_rate_decay_steps', 'eval_accuracy'}


@pytest.fixture(scope='module')
def cifar_shapes(tmp_path_factory):
  from preprocessing import shapes_data  # pylint: disable=g-import-not-at-top
  root = str(tmp_path_factory.mktemp('shapes'))
  shapes_data.write_cifar10(root, train_per_class=10, validation_per_class=4)
  return root


def _mlperf_run(data_dir, tmp_path, engine='graph', **overrides):
  settings = dict(
      model='resnet20', data_name='cifar10', data_dir=data_dir,
      batch_size=8, num_batches=16, num_warmup_batches=2,
      eval_during_training_every_n_epochs=0.5, eval_batch_size=8,
      stop_at_top_1_accuracy=0.99, optimizer='momentum', weight_decay=1e-4,
      ml_perf_compliance_logging=True, result_dir=str(tmp_path),
      display_every=8, engine=engine)
  settings.update(overrides)
  if engine == 'tf2':
    out = io.StringIO()
    params = flags.make_params(**dict(dict(device='cpu'), **settings))
    return tf2_engine.run(params, reporter=report.Reporter(out)), \
        out.getvalue()
  return run_quietly(**settings)


def _check(path, division):
  """(passed, keys the checker complained about) for ``division``."""
  text = open(path).read().replace(
      '"key": "submission_division", "value": "open"',
      '"key": "submission_division", "value": "%s"' % division)
  rewritten = path + '.' + division
  with open(rewritten, 'w') as f:
    f.write(text)
  one = checker.make_checker('training', mlperf_log.RULESET, quiet=True,
                             werror=False)
  passed = one.check_file(rewritten, 'training_%s/common.yaml'
                          % mlperf_log.RULESET)
  # Its complaints: by key, or as messages that name the key.
  complaints = set(one.overwritable)
  for message in one.not_overwritable:
    named = re.search(r"(?:checks for |occurrence of ')(\w+)", message)
    complaints.add(named.group(1) if named else message)
  return passed, complaints


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize('engine', ['graph', 'tf2'])
def test_a_resnet_run_logs_what_the_checker_passes(cifar_shapes, tmp_path,
                                                    engine):
  result, text = _mlperf_run(cifar_shapes, tmp_path, engine)
  # 100 images, batch 8: 12.5 steps an epoch, an evaluation every 6 steps.
  assert result.exit_code == exit_codes.TARGET_NOT_REACHED, text
  path = result.mlperf_log_path
  assert os.path.dirname(path) == str(tmp_path)
  events = mlperf_log.read_events(path)
  keys = [k for k, _, _ in events]
  # To the console too, line for line.
  assert text.count(':::MLLOG ') == len(events)
  values = {k: v for k, v, _ in events}
  assert values['submission_benchmark'] == 'resnet'
  assert values['global_batch_size'] == 8
  assert values['train_samples'] == 100
  assert values['opt_name'] == 'sgd' and values['sgd_opt_momentum'] == 0.9
  assert values['sgd_opt_weight_decay'] == 1e-4
  counts = collections.Counter(keys)
  # 2 + 16 steps = 1.44 epochs: 2 epochs begun; evaluations after timed
  # steps 6, 12 and 16.
  assert counts['epoch_start'] == counts['epoch_stop']
  assert counts['eval_accuracy'] == 3 == counts['block_start']
  assert keys.index('init_stop') < keys.index('run_start') < keys.index(
      'block_start') < keys.index('eval_start')
  assert keys[-1] == 'run_stop'
  assert events[-1][2]['status'] == 'aborted'  # 0.99 was not reached
  # The record says where the log is.
  assert result.record['mlperf_log'] == path
  passed, complaints = _check(path, 'open')
  assert passed, complaints
  passed, complaints = _check(path, 'closed')
  assert not passed and complaints <= CLOSED_ONLY, complaints


@pytest.mark.timeout(300)
def test_a_run_that_reaches_its_target_logs_success(cifar_shapes, tmp_path):
  # A target of 0 is reached by the first evaluation.
  result, text = _mlperf_run(cifar_shapes, tmp_path, num_batches=6,
                             num_warmup_batches=0, stop_at_top_1_accuracy=0.0)
  assert result.status == 'ok', text
  events = mlperf_log.read_events(result.mlperf_log_path)
  assert [k for k, _, _ in events][-1] == 'run_stop'
  assert events[-1][2]['status'] == 'success'
  assert checker.make_checker('training', mlperf_log.RULESET, True,
                              False).check_file(
                                  result.mlperf_log_path,
                                  'training_4.0.0/common.yaml')


@pytest.mark.parametrize('overrides, words', [
    (dict(model='vgg16'), 'not a ResNet'),
    (dict(), '--stop_at_top_1_accuracy=T'),
    (dict(ml_perf_compliance_logging=False, ml_perf_log_file='x'),
     'add --ml_perf_compliance_logging'),
])
def test_usage_errors(overrides, words):
  settings = dict(model='resnet20', data_name='cifar10',
                  ml_perf_compliance_logging=True)
  settings.update(overrides)
  with pytest.raises(flags.UsageError, match=words.replace('-', '.')):
    flags.make_params(**settings)


def test_ml_perf_mode_centres_images_on_the_channel_means(tmp_path):
  """--ml_perf: the original's MLPerf input, images minus ImageNet's
  channel means instead of scaled to [-1, 1] (the same crop otherwise:
  evaluation's central crop is deterministic)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from preprocessing import build_dataset  # pylint: disable=g-import-not-at-top
  from preprocessing import get_input_source  # pylint: disable=g-import-not-at-top
  from preprocessing import image_ops  # pylint: disable=g-import-not-at-top
  from tests.preprocessing.conftest import make_params  # pylint: disable=g-import-not-at-top
  from tests.preprocessing.conftest import run_batches  # pylint: disable=g-import-not-at-top
  data = str(tmp_path / 'shapes')
  build_dataset.write_generated_imagenet(data, 3, 2, 4, 40, 40,
                                         num_validation_shards=1)
  images = {}
  for ml_perf in (False, True):
    source = get_input_source(make_params(data, ml_perf=ml_perf), 32, 4, 4,
                              1, 'validation')
    _, [[(images[ml_perf], _)]] = run_batches(source, 1)
  means = np.array(image_ops.IMAGENET_CHANNEL_MEANS)
  np.testing.assert_allclose(images[True], (images[False] + 1.0) * 127.5 -
                             means, atol=1e-3)
  assert images[True].max() > 1.5  # not in [-1, 1]
  for settings, words in ((dict(), 'synthetic data'),
                          (dict(data_dir=data, data_name='cifar10'),
                           'CIFAR-10')):
    with pytest.raises(flags.UsageError, match=words):
      flags.make_params(ml_perf=True, **settings)
  flags.make_params(ml_perf=True, data_dir=data)  # ImageNet records: fine


def test_epochs_and_blocks_follow_the_steps(tmp_path):
  """4 steps an epoch, an evaluation every 4 steps: each block is one
  epoch, no epoch is logged without a step in it, the counts match."""
  import types  # pylint: disable=g-import-not-at-top
  from tf_cnn_benchmarks.run import evaluation  # pylint: disable=g-import-not-at-top
  params = flags.make_params(
      model='resnet20', data_name='cifar10', ml_perf_compliance_logging=True,
      eval_during_training_every_n_steps=4, stop_at_top_1_accuracy=0.9,
      ml_perf_log_file=str(tmp_path / 'm.log'), result_dir='')
  rc = types.SimpleNamespace(
      params=params, examples_per_epoch=40, global_batch_size=10,
      num_warmup_batches=0, num_batches=8, eval_steps=1,
      eval_batch_size_per_worker=10, batch_size_per_device=10,
      piecewise_schedule=None, initial_learning_rate=0.1, num_towers=1,
      num_workers=1)
  said = []
  log = mlperf_log.open_log(params, 'abcdef12', said.append)
  log.run_starts(rc)
  for step in range(1, 9):
    log.trained(step)
    if step % 4 == 0:
      log.evaluation_starts(step)
      log.evaluated(evaluation.Evaluation(step, step, 0.5, 0.9, 10,
                                          epoch=step / 4.0))
  log.run_stops('target_not_reached')
  events = mlperf_log.read_events(str(tmp_path / 'm.log'))
  assert len(said) == len(events)  # the console got every line
  shape = [(k, m.get('epoch_num', m.get('first_epoch_num')))
           for k, _, m in events if k in ('block_start', 'epoch_start',
                                          'epoch_stop', 'block_stop',
                                          'eval_accuracy', 'run_stop')]
  assert shape == [
      ('block_start', 1), ('epoch_start', 1), ('epoch_stop', 1),
      ('block_stop', 1), ('eval_accuracy', 1.0),
      ('block_start', 2), ('epoch_start', 2), ('epoch_stop', 2),
      ('block_stop', 2), ('eval_accuracy', 2.0), ('run_stop', None)]
  assert [m['epoch_count'] for k, _, m in events if k == 'block_start'] == [
      1.0, 1.0]
  assert events[-1][2]['status'] == 'aborted'
