"""The package's layers (docs/architecture.md): who may import whom.

Read from the source with ``ast``, so a forbidden import fails here even in
a function body that no other test reaches; and checked once for real: a
whole single-process run loads nothing from the cluster runtime.
"""

import ast
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = 'tf_cnn_benchmarks'

# Layer of a module, by where it lives.
CORE, CLUSTER, LIVENESS, MEASURE, VARIABLE_UPDATE, ENGINE_TF2 = (
    'core', 'cluster', 'liveness', 'measure', 'variable_update',
    'engine_tf2')
# Layer -> layers of this package it may import. The core is one local run;
# the cluster runtime sits beside it and may use all of it. The tf2 engine
# sits beside the core too: it uses the core's inputs, step loop, report
# and record, and the core never imports it (the driver is handed it).
# Liveness (the watchdog both share) uses the core's failure words and exit
# codes only.
MAY_IMPORT = {
    CORE: {CORE, LIVENESS, MEASURE, VARIABLE_UPDATE},
    LIVENESS: {LIVENESS, CORE},
    VARIABLE_UPDATE: {VARIABLE_UPDATE},
    MEASURE: {MEASURE},
    ENGINE_TF2: {ENGINE_TF2, CORE, LIVENESS, MEASURE, VARIABLE_UPDATE},
    CLUSTER: {CLUSTER, CORE, LIVENESS, MEASURE, VARIABLE_UPDATE, ENGINE_TF2},
}
# The command entry points hand a cluster task to the cluster runtime, and
# a --engine=tf2 run the tf2 engine (lazily: only such a run reaches that
# import).
ENTRY_POINTS = {'tf_cnn_benchmarks.cli', 'tf_cnn_benchmarks.benchmark_main'}
HANDED_OVER = (CLUSTER, ENGINE_TF2)
# Top-level libraries beside the package must not reach into it.
LIBRARIES = ('models', 'preprocessing', 'results')


def _modules(top):
  for folder, _, files in os.walk(os.path.join(ROOT, top)):
    for name in sorted(files):
      if name.endswith('.py'):
        path = os.path.join(folder, name)
        module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.')
        yield module.removesuffix('.__init__'), path


def _layer(module):
  parts = module.split('.')
  if len(parts) > 2 and parts[1] in (CLUSTER, LIVENESS, MEASURE,
                                     VARIABLE_UPDATE, ENGINE_TF2):
    return parts[1]
  return CORE


def _imports(path):
  """Every module name an import statement in ``path`` names."""
  tree = ast.parse(open(path).read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name
    elif isinstance(node, ast.ImportFrom) and node.module:
      for alias in node.names:
        yield '%s.%s' % (node.module, alias.name)


def _package_target(name):
  """The module of this package an import names, or None."""
  if not name.startswith(PACKAGE + '.'):
    return None
  parts = name.split('.')
  # 'tf_cnn_benchmarks.cluster' (the folder itself) counts as cluster.
  return '.'.join(parts[:3]) if len(parts) >= 2 else None


def _violations():
  found = []
  for module, path in _modules(PACKAGE):
    own = _layer(module)
    for name in _imports(path):
      target = _package_target(name)
      if target is None:
        continue
      if target in (PACKAGE + '.' + CLUSTER, PACKAGE + '.' + ENGINE_TF2):
        layer = target.split('.')[1]
      else:
        layer = _layer(target)
      if layer in MAY_IMPORT[own]:
        continue
      if module in ENTRY_POINTS and layer in HANDED_OVER:
        continue
      found.append('%s (%s) imports %s (%s)' % (module, own, name, layer))
  for library in LIBRARIES:
    for module, path in _modules(library):
      found.extend('%s imports %s' % (module, name)
                   for name in _imports(path)
                   if name == PACKAGE or name.startswith(PACKAGE + '.'))
  return found


def test_every_import_respects_the_layers():
  assert _violations() == []


def test_liveness_loads_no_tensorflow():
  """The watchdog's package is TensorFlow-free: it must keep working (and
  load fast) whatever TensorFlow is doing."""
  for module, path in _modules(os.path.join(PACKAGE, LIVENESS)):
    for name in _imports(path):
      assert not name.startswith('tensorflow'), '%s imports %s' % (module,
                                                                   name)
      target = _package_target(name)
      assert target is None or _layer(target) == LIVENESS or target in (
          PACKAGE + '.failures', PACKAGE + '.exit_codes'), (module, name)


def test_the_layer_check_sees_a_forbidden_import(tmp_path, monkeypatch):
  """The check itself: a core module importing the cluster is caught."""
  bad = tmp_path / 'bad.py'
  bad.write_text('from tf_cnn_benchmarks.cluster import roles\n'
                 'def f():\n  from tf_cnn_benchmarks.cluster import '
                 'watchdog\n')
  names = [_package_target(n) for n in _imports(str(bad))]
  assert names == ['tf_cnn_benchmarks.cluster.roles',
                   'tf_cnn_benchmarks.cluster.watchdog']
  assert all(_layer(n) == CLUSTER for n in names)
  assert CLUSTER not in MAY_IMPORT[CORE]


def test_the_core_never_imports_the_tf2_engine(tmp_path):
  """The check itself: the core reaching into engine_tf2 is caught."""
  bad = tmp_path / 'bad.py'
  bad.write_text('def f():\n  from tf_cnn_benchmarks.engine_tf2 import '
                 'engine\n')
  names = [_package_target(n) for n in _imports(str(bad))]
  assert names == ['tf_cnn_benchmarks.engine_tf2.engine']
  assert _layer(names[0]) == ENGINE_TF2
  assert ENGINE_TF2 not in MAY_IMPORT[CORE]


def test_the_cluster_modes_facts_live_in_one_table():
  """Every mode the flags accept is a row of variable_update/modes.py, and
  each manager class reads its facts from there."""
  from tf_cnn_benchmarks import flags
  from tf_cnn_benchmarks import variable_update
  from tf_cnn_benchmarks.variable_update import modes
  assert set(flags.VARIABLE_UPDATES) == set(modes.MODES)
  for mode in modes.MODES.values():
    for in_cluster in (False, True):
      if (mode.runs_in_cluster if in_cluster else mode.runs_locally):
        cls = variable_update.manager_class(mode.name, in_cluster)
        assert cls.name == mode.name and issubclass(
            cls, variable_update.base.VariableManager)


@pytest.mark.timeout(300)
def test_a_local_run_loads_nothing_from_the_cluster_runtime_or_tf2_engine(
    tmp_path):
  script = (
      'import sys\n'
      'from tf_cnn_benchmarks import benchmark_main\n'
      'code = benchmark_main.main(["x", "--model=trivial", "--device=cpu",'
      ' "--batch_size=2", "--num_batches=2", "--num_warmup_batches=1",'
      ' "--result_dir=%s", "--peak_gflops=100",'
      ' "--variable_update=replicated", "--num_gpus=2"])\n'
      'assert code == 0, code\n'
      'loaded = sorted(m for m in sys.modules if m.startswith('
      '("tf_cnn_benchmarks.cluster", "tf_cnn_benchmarks.variable_update.'
      'distributed", "tf_cnn_benchmarks.variable_update.collective", '
      '"tf_cnn_benchmarks.variable_update.cluster_base", '
      '"tf_cnn_benchmarks.variable_update.sync_replicas", '
      '"tf_cnn_benchmarks.engine_tf2")))\n'
      'print("LOADED", loaded)\n' % tmp_path)
  done = subprocess.run([sys.executable, '-c', script], cwd=ROOT,
                        capture_output=True, text=True, timeout=280)
  assert done.returncode == 0, done.stdout + done.stderr
  assert 'LOADED []' in done.stdout, done.stdout


def test_every_folder_of_code_is_an_installed_package():
  """A wheel (not only an editable install) carries every folder."""
  import setuptools  # pylint: disable=g-import-not-at-top
  found = set(setuptools.find_packages(
      ROOT, include=['%s*' % top for top in (PACKAGE,) + LIBRARIES]))
  folders = set()
  for top in (PACKAGE,) + LIBRARIES:
    for folder, _, files in os.walk(os.path.join(ROOT, top)):
      if any(f.endswith('.py') for f in files):
        folders.add(os.path.relpath(folder, ROOT).replace(os.sep, '.'))
  assert folders - found == set()


def test_launched_tasks_import_this_checkout():
  from tf_cnn_benchmarks.cluster import task_processes  # pylint: disable=g-import-not-at-top
  first = task_processes.child_env()['PYTHONPATH'].split(os.pathsep)[0]
  assert os.path.isfile(os.path.join(first, PACKAGE, '__init__.py'))
