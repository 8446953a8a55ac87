"""Flags: names and defaults of the original, readable errors, exit code 2."""

import os
import re
import subprocess
import sys

from absl import flags as absl_flags
import pytest

from tests import tools
from tests.driver_helpers import run_cli
from tf_cnn_benchmarks import exit_codes
from tf_cnn_benchmarks.config import flag_specs
from tf_cnn_benchmarks.config import flags


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


def test_input_flags_have_the_originals_defaults_and_values():
  p = parse()
  assert (p.use_datasets, p.input_preprocessor, p.distort_color_in_yiq) == (
      True, 'default', True)
  assert (p.datasets_repeat_cached_sample,
          p.datasets_sloppy_parallel_interleave,
          p.datasets_parallel_interleave_prefetch,
          p.multi_device_iterator_max_buffer_size) == (False, False, None, 1)
  p = parse('--resize_method=round_robin', '--nodistort_color_in_yiq',
            '--use_datasets', '--input_preprocessor=default',
            '--datasets_repeat_cached_sample',
            '--datasets_sloppy_parallel_interleave',
            '--datasets_parallel_interleave_prefetch=3',
            '--multi_device_iterator_max_buffer_size=4')
  assert (p.resize_method, p.distort_color_in_yiq) == ('round_robin', False)
  assert (p.datasets_repeat_cached_sample,
          p.datasets_sloppy_parallel_interleave,
          p.datasets_parallel_interleave_prefetch,
          p.multi_device_iterator_max_buffer_size) == (True, True, 3, 4)


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
    (['--optimizer=adagrad'], 'allowed values: momentum, sgd, rmsprop, adam'),
    (['--num_batches=10', '--num_epochs=1'], 'give only one'),
    (['--forward_only', '--eval', '--train_dir=/tmp/x'], 'Give one of them'),
    (['--eval'], 'no --train_dir was given'),
    (['--no_such_flag=1'], 'Unknown flag --no_such_flag'),
    (['--batch_size=-4'], 'batch_size'),
    (['resnet50'], 'every setting is a --flag=value'),
    (['--trt_mode=FP16'], 'does not implement'),
    (['--variable_update=distributed_replicated'], 'needs --job_name'),
    (['--piecewise_learning_rate_schedule=0.1;x'], 'rate;epoch'),
    (['--all_reduce_spec=pscpu'], 'with --variable_update=parameter_server '
                                  'is not supported'),
    (['--num_epochs_per_decay=2'], 'go together'),
    (['--nouse_datasets'], '--use_datasets=False selected the original\'s '
                           'RecordInput'),
    (['--input_preprocessor=official_models_imagenet'],
     'use --input_preprocessor=default'),
    (['--input_preprocessor=slim_vgg'], 'use --input_preprocessor=default'),
    (['--resize_method=lanczos'], 'round_robin'),
    (['--multi_device_iterator_max_buffer_size=0'],
     'multi_device_iterator_max_buffer_size'),
])
def test_bad_flags_are_usage_errors(args, phrase):
  with pytest.raises(flags.UsageError) as e:
    parse(*args)
  assert phrase in str(e.value)


_PS_WORKER = ('--job_name=worker', '--worker_hosts=a:1,b:2', '--ps_hosts=c:3')


@pytest.mark.parametrize('args, phrase', [
    ([], 'a single process'),
    (_PS_WORKER + ('--cross_replica_sync=False',), 'an asynchronous cluster'),
    (('--job_name=worker', '--worker_hosts=a:1,b:2',
      '--variable_update=collective_all_reduce'), 'has no ps tasks'),
])
def test_sync_updates_barrier_only_in_a_synchronous_ps_cluster(args, phrase):
  with pytest.raises(flags.UsageError) as e:
    parse('--sync_updates=barrier', *args)
  assert phrase in str(e.value) and '--sync_updates=barrier' in str(e.value)
  # True synchronous SGD stays the default, and "mean" is valid anywhere.
  assert parse(*_PS_WORKER).sync_updates == 'mean'
  assert parse('--sync_updates=mean').sync_updates == 'mean'
  for mode in ('parameter_server', 'distributed_replicated'):
    assert parse('--sync_updates=barrier', '--variable_update=' + mode,
                 *_PS_WORKER).sync_updates == 'barrier'


# What absl calls each kind of flag the table names.
_ABSL_FLAG_TYPE = {'string': 'string', 'boolean': 'bool', 'integer': 'int',
                   'float': 'float', 'enum': 'string enum',
                   'list': 'comma separated list of strings'}


def _command_line_value(spec, value):
  if spec.kind == 'boolean':
    return '--%s' % spec.name if value else '--no%s' % spec.name
  return '--%s=%s' % (spec.name, value)


def _another_value(spec):
  """A value of the flag's kind, within its bounds, other than its default."""
  if spec.kind == 'boolean':
    return not spec.default
  if spec.kind in ('integer', 'float'):
    return (spec.default or 0) + (1 if spec.kind == 'integer' else 0.5)
  if spec.kind == 'enum':
    return next(v for v in spec.enum_values if v != spec.default)
  if spec.kind == 'list':
    return '1'
  return 'x' + (spec.default or '')


def test_every_original_flag_is_in_the_table():
  assert all(s.theme == flag_specs.REFUSED for s in flag_specs.REFUSED_SPECS)
  assert not [s for s in flag_specs.FLAG_SPECS
              if s.refused and s.theme != flag_specs.REFUSED]


@pytest.mark.parametrize('spec', flag_specs.REFUSED_SPECS,
                         ids=lambda s: s.name)
def test_refused_flag_parses_at_its_default_only(spec):
  fv = absl_flags.FlagValues()
  flags.define_flags(fv)
  assert fv[spec.name].flag_type() == _ABSL_FLAG_TYPE[spec.kind]
  assert getattr(parse(), spec.name) == spec.default
  if spec.default is not None:
    given = parse(_command_line_value(spec, spec.default))
    assert getattr(given, spec.name) == spec.default
  with pytest.raises(flags.UsageError) as e:
    parse(_command_line_value(spec, _another_value(spec)))
  assert str(e.value).startswith('--%s is a flag of the original' % spec.name)
  assert '(%s)' % spec.refused in str(e.value)
  with pytest.raises(flags.UsageError):
    flags.make_params(**{spec.name: _another_value(spec)})


def test_every_absl_flag_has_its_specs_kind_and_default():
  fv = absl_flags.FlagValues()
  flags.define_flags(fv)
  for spec in flag_specs.FLAG_SPECS:
    assert fv[spec.name].flag_type() == _ABSL_FLAG_TYPE[spec.kind], spec.name
    assert fv[spec.name].default == spec.default, spec.name
  assert set(fv) == set(flags.SPECS_BY_NAME)


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


def test_help_groups_flags_by_theme():
  out = run_cli('--help')
  assert out.returncode == 0
  text = out.stdout
  themes = flag_specs.THEMES + (flag_specs.REFUSED,)
  positions = [text.index(theme + ':') for theme in themes]
  assert positions == sorted(positions)
  model_section = text[text.index(flag_specs.MODEL + ':'):text.index(
      flag_specs.BATCH + ':')]
  assert '--model' in model_section and '--batch_size' not in model_section
  refused_section = text[text.index(flag_specs.REFUSED + ':'):]
  for spec in flag_specs.REFUSED_SPECS:
    assert '--%s ' % spec.name in refused_section
  assert 'Not implemented: barriers are built in.' in refused_section


def test_installed_command_runs_like_the_script():
  """`pip install -e .` puts a tf_cnn_benchmarks command beside python."""
  command = os.path.join(os.path.dirname(sys.executable), 'tf_cnn_benchmarks')
  if not os.path.exists(command):
    tools.unavailable('the package is not installed in this environment',
                      "pip install -e '.[cpu,test]' (`make test` does)")
  out = subprocess.run([command, '--help'], capture_output=True, text=True,
                       timeout=60)
  assert out.returncode == 0 and flag_specs.MODEL + ':' in out.stdout


# The original tool's 138 flags, names and defaults, read from its source
# (tests/data/original_flags.py made this file).
ORIGINAL_FLAGS_TSV = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  'data', 'original_flags.tsv')
# Accepted for old command lines and documented as changing nothing: what
# they selected has one form here (their help says which).
NO_EFFECT = {'collect_eval_results_async', 'use_tf_layers',
             'allreduce_merge_scope'}
# Where a flag's value is read: every package but the flag table itself.
_READERS = ('tf_cnn_benchmarks', 'models', 'preprocessing')


def _original_flags():
  with open(ORIGINAL_FLAGS_TSV) as f:
    return [tuple(l.rstrip('\n').split('\t')) for l in f
            if l.strip() and not l.startswith('#')]


def _product_sources():
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  sources = []
  for package in _READERS:
    for folder, _, files in os.walk(os.path.join(root, package)):
      for name in files:
        path = os.path.join(folder, name)
        if name.endswith('.py') and not path.endswith(
            (os.path.join('config', 'flag_specs.py'),
             os.path.join('config', 'flags.py'))):
          with open(path) as f:
            sources.append(f.read())
  return sources


def test_every_original_flag_is_answered():
  """A pasted original command line never gets "Unknown flag": each of the
  original's flags parses at its default, and a changed value is refused
  with a reason (a UsageError naming the flag), or it does something: it
  changes its field of Params, and code beyond the flag table reads that
  field; the few flags that change nothing here say so in their help."""
  originals = _original_flags()
  assert len(originals) == 138
  unknown = [n for n, _ in originals if n not in flag_specs.SPECS_BY_NAME]
  assert unknown == []
  defaults = flags.parse_command_line(['x'])[0]
  sources = _product_sources()
  unread = []
  for name, default in originals:
    spec = flag_specs.SPECS_BY_NAME[name]
    # Defaults are what users' scripts rely on; data_format's None means
    # NCHW on a GPU, NHWC on a CPU (the original required NHWC there).
    if name != 'data_format':
      assert default in (repr(spec.default), str(spec.default)) or (
          spec.default == 0 and default == '0'), name
    changed = _another_value(spec)
    try:
      params = flags.parse_command_line(
          ['x', _command_line_value(spec, changed)])[0]
    except flags.UsageError as e:
      assert 'Unknown flag' not in str(e), name
      assert '--' + name in str(e) or spec.refused is None, (name, str(e))
      continue
    assert spec.refused is None, name
    assert getattr(params, name) != getattr(defaults, name), name
    read = re.compile(r'\.%s\b|[\'"]%s[\'"]' % (name, name))
    if not any(read.search(source) for source in sources):
      unread.append(name)
  assert sorted(unread) == sorted(NO_EFFECT - {'allreduce_merge_scope'}), (
      unread)
  for name in NO_EFFECT:
    assert 'accepted for old command lines' in flag_specs.SPECS_BY_NAME[
        name].help, name


@pytest.mark.parametrize('argv, message', [
    (['--modle=resnet50'], 'Unknown flag --modle. Did you mean --model?'),
    (['--num_batches=abc'], '--num_batches=abc is not a number: '
     '--num_batches takes a whole number'),
    (['--init_learning_rate=fast'], '--init_learning_rate takes a number'),
    (['--device=tpu'], '--device=tpu is not one of the allowed values: cpu, '
     'gpu'),
    (['--variable_update=horovod'], 'TensorFlow <= 2.18'),
])
def test_bad_values_say_which_flag_and_what_it_takes(argv, message):
  with pytest.raises(flags.UsageError) as info:
    flags.parse_command_line(['x'] + argv)
  assert message in str(info.value)
  assert 'invalid literal' not in str(info.value)
  assert 'could not convert' not in str(info.value)


def test_horovod_is_not_offered_in_help():
  assert 'horovod|' not in flags_help()
  assert '|collective_all_reduce>' in flags_help()


def flags_help():
  fv = absl_flags.FlagValues()
  flags.define_flags(fv)
  return flags.help_text(fv)


def test_unknown_model_suggests_the_nearest(tmp_path):
  out = run_cli('--model=resnet51', '--device=cpu',
                '--result_dir=%s' % tmp_path)
  assert out.returncode == exit_codes.USAGE
  assert 'Did you mean resnet50?' in out.stderr
  assert 'Traceback' not in out.stderr


def test_version_names_harness_commit_and_tensorflow():
  out = run_cli('--version')
  assert out.returncode == 0, out.stderr
  harness, tensorflow = out.stdout.strip().splitlines()
  assert harness.startswith('tf_cnn_benchmarks ') and '(commit ' in harness
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  assert tensorflow.startswith('TensorFlow %s (' % tf.__version__)


def test_launch_without_the_separator_says_where_flags_go():
  out = run_cli('launch', '--workers', '2', '--model=trivial')
  assert out.returncode == exit_codes.USAGE
  assert ('Benchmark flags go after "--": tf_cnn_benchmarks launch '
          '--workers 2 -- --model=trivial') in out.stderr


def test_readme_lists_every_refused_flag_with_its_reason():
  readme = open(os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), 'README.md')).read()
  for spec in flag_specs.REFUSED_SPECS:
    assert '| `--%s` | %s |' % (spec.name, spec.refused) in readme, spec.name
  for spec in flag_specs.FLAG_SPECS:
    for value, reason in spec.refused_values:
      assert '| `--%s=%s` | %s |' % (spec.name, value, reason) in readme
