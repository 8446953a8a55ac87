"""Flags: names and defaults of the original, readable errors, exit code 2."""

import os
import subprocess
import sys

import pytest

from tests.driver_helpers import run_cli
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks import flags


def parse(*args):
  return flags.parse_command_line(['tf_cnn_benchmarks'] + list(args))[0]


def test_defaults_are_the_originals():
  p = parse()
  assert p.model == 'trivial'
  assert p.batch_size == 0
  assert p.num_batches is None
  assert p.display_every == 10
  assert p.device == 'gpu'
  assert p.variable_update == 'parameter_server'
  assert p.optimizer == 'sgd'
  assert p.weight_decay == 4e-5
  assert p.tf_random_seed == 1234
  assert p.momentum == 0.9
  assert p.cross_replica_sync is True
  assert p.server_protocol == 'grpc'


def test_values_are_parsed():
  p = parse('--model=resnet50', '--batch_size=16', '--num_gpus=2',
            '--variable_update=replicated', '--optimizer=momentum',
            '--data_format=NHWC', '--use_fp16')
  assert (p.model, p.batch_size, p.num_gpus) == ('resnet50', 16, 2)
  assert (p.variable_update, p.optimizer, p.data_format) == (
      'replicated', 'momentum', 'NHWC')
  assert p.use_fp16 is True


def test_params_are_read_only_and_replace_validates():
  p = flags.make_params(model='vgg16')
  with pytest.raises(AttributeError):
    p.model = 'x'
  assert p.replace(batch_size=8).batch_size == 8
  with pytest.raises(flags.UsageError):
    p.replace(num_batches=5, num_epochs=1.0)


@pytest.mark.parametrize('args, phrase', [
    (['--optimizer=adagrad'], 'momentum|sgd|rmsprop|adam'),
    (['--num_batches=10', '--num_epochs=1'], 'give only one'),
    (['--forward_only', '--eval', '--train_dir=/tmp/x'], 'Give one of them'),
    (['--eval'], 'no --train_dir was given'),
    (['--no_such_flag=1'], 'Unknown flag --no_such_flag'),
    (['--batch_size=-4'], 'batch_size'),
    (['resnet50'], 'every setting is a --flag=value'),
    (['--trt_mode=FP16'], 'does not implement'),
    (['--variable_update=distributed_replicated'], 'needs --job_name'),
    (['--piecewise_learning_rate_schedule=0.1;x'], 'rate;epoch'),
    (['--all_reduce_spec=pscpu'], 'only applies to --variable_update='
                                  'replicated'),
    (['--num_epochs_per_decay=2'], 'go together'),
])
def test_bad_flags_are_usage_errors(args, phrase):
  with pytest.raises(flags.UsageError) as e:
    parse(*args)
  assert phrase in str(e.value)


def test_cli_usage_error_is_one_paragraph_and_exit_2():
  out = run_cli('--optimizer=adagrad')
  assert out.returncode == exit_codes.USAGE
  message = out.stderr.strip()
  assert message.startswith('Error: ')
  assert 'optimizer' in message and '\n\n' not in message
  assert out.stdout == ''


def test_cli_unknown_model_lists_valid_ones():
  out = run_cli('--model=resnet5')
  assert out.returncode == exit_codes.USAGE
  assert "Unknown model 'resnet5'" in out.stderr
  assert 'trivial' in out.stderr
  # TensorFlow's own start-up chatter stays out of a usage error.
  assert 'oneDNN' not in out.stderr


def test_cli_ncf_is_a_usage_error_that_says_why():
  # The original registered ncf; a pasted command must not read as a typo.
  out = run_cli('--model=ncf')
  assert out.returncode == exit_codes.USAGE
  assert out.stderr.startswith('Error: --model=ncf is not provided')
  assert 'Unknown model' not in out.stderr
  assert 'recommendation' in out.stderr and 'ncf_keras_main' in out.stderr


def test_help_groups_flags_by_theme():
  out = run_cli('--help')
  assert out.returncode == 0
  text = out.stdout
  positions = [text.index(theme + ':') for theme in flags.THEMES]
  assert positions == sorted(positions)
  model_section = text[text.index(flags.MODEL + ':'):text.index(
      flags.BATCH + ':')]
  assert '--model' in model_section and '--batch_size' not in model_section


def test_installed_command_runs_like_the_script():
  """`pip install -e .` puts a tf_cnn_benchmarks command beside python."""
  command = os.path.join(os.path.dirname(sys.executable), 'tf_cnn_benchmarks')
  if not os.path.exists(command):
    pytest.skip('the package is not installed in this environment (run '
                '`make test`, which installs it)')
  out = subprocess.run([command, '--help'], capture_output=True, text=True,
                       timeout=60)
  assert out.returncode == 0 and flags.MODEL + ':' in out.stdout
