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

# A module's layer is its folder (docs/architecture.md draws them). The
# package's own top-level modules are the entry points (which may import
# anything: they choose the engine and hand a cluster task over) and the
# shared vocabulary below everything (exit codes, failure words, the
# contracts between parts). test_hooks/__init__.py is the switch: the only
# way product code reaches test-only code.
BASE, ENTRY, SWITCH = 'base', 'entry', 'test_hooks switch'
ENTRY_POINTS = {'cli', 'benchmark_main'}
FOLDER_LAYERS = ('config', 'process', 'run', 'training', 'engine_graph',
                 'engine_tf2', 'test_hooks', 'liveness', 'measure',
                 'variable_update', 'cluster', 'cluster.launch',
                 'cluster.task', 'cluster.watch')
# Layer -> layers it may import. Read top to bottom: config decides, run
# runs either engine, the engines build on training's shared math, and the
# cluster's three programs sit above the shared roles/deadlines/server: the
# launcher (no TensorFlow, on the user's machine), the task, and the task's
# watchdog checks.
MAY_IMPORT = {
    BASE: {BASE},
    'variable_update': {'variable_update'},
    'liveness': {BASE, 'liveness'},
    'measure': {BASE, 'measure'},
    'config': {BASE, 'config', 'variable_update', 'measure', SWITCH},
    'process': {BASE, 'config', 'process'},
    'test_hooks': {BASE, 'config', 'test_hooks', SWITCH},
    SWITCH: {'test_hooks'},
    'training': {BASE, 'config', 'training'},
    'run': {BASE, 'config', 'process', 'liveness', 'measure',
            'variable_update', 'run', SWITCH},
    'engine_graph': {BASE, 'config', 'liveness', 'measure',
                     'variable_update', 'training', 'run', 'engine_graph'},
    'engine_tf2': {BASE, 'config', 'liveness', 'measure', 'variable_update',
                   'training', 'run', 'engine_tf2'},
    'cluster': {BASE, 'config', 'variable_update', 'cluster'},
    'cluster.watch': {BASE, 'config', 'liveness', 'variable_update',
                      'cluster', 'cluster.watch'},
    'cluster.task': {BASE, 'config', 'liveness', 'measure',
                     'variable_update', 'run', 'engine_graph', 'engine_tf2',
                     'cluster', 'cluster.watch', 'cluster.task', SWITCH},
    # variable_update for its modes table (TensorFlow-free, modes.py).
    'cluster.launch': {BASE, 'config', 'process', 'liveness', 'measure',
                       'variable_update', 'cluster', 'cluster.watch',
                       'cluster.launch'},
}
# Top-level libraries beside the package must not reach into it; basics
# (file helpers) sits below all of them and imports none.
LIBRARIES = ('models', 'preprocessing', 'results', 'basics')
PROJECT_TOPS = (PACKAGE,) + LIBRARIES


def _modules(top):
  for folder, _, files in os.walk(os.path.join(ROOT, top)):
    for name in sorted(files):
      if name.endswith('.py'):
        path = os.path.join(folder, name)
        module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.')
        yield module.removesuffix('.__init__'), path


def _is_module(dotted):
  path = os.path.join(ROOT, *dotted.split('.'))
  return os.path.isfile(path + '.py') or os.path.isfile(
      os.path.join(path, '__init__.py'))


def _project_module(name):
  """The project module an import names (its longest existing prefix:
  ``a.b.Name`` is module ``a.b``), or None for a third-party name."""
  parts = name.split('.')
  if parts[0] not in PROJECT_TOPS:
    return None
  for end in range(len(parts), 0, -1):
    if _is_module('.'.join(parts[:end])):
      return '.'.join(parts[:end])
  return None


def _layer(module):
  """The layer of a module of this package, by its folder."""
  parts = module.split('.')[1:]
  if module == PACKAGE + '.test_hooks':
    return SWITCH
  if not parts:
    return BASE
  is_package = os.path.isdir(os.path.join(ROOT, *module.split('.')))
  folder = parts if is_package else parts[:-1]
  for depth in (2, 1):
    if '.'.join(folder[:depth]) in FOLDER_LAYERS:
      return '.'.join(folder[:depth])
  return ENTRY if parts[-1] in ENTRY_POINTS else BASE


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


def _violations(modules=None):
  found = []
  for module, path in modules or _modules(PACKAGE):
    own = _layer(module)
    for name in _imports(path):
      target = _project_module(name)
      if target is None or own == ENTRY:
        continue
      if target.split('.')[0] != PACKAGE:
        continue  # the libraries: any layer may use them
      layer = _layer(target)
      if layer not in MAY_IMPORT[own]:
        found.append('%s (%s) imports %s (%s)' % (module, own, name, layer))
  for library in LIBRARIES:
    for module, path in _modules(library):
      for name in _imports(path):
        target = _project_module(name)
        top = target and target.split('.')[0]
        if top == PACKAGE or (library == 'basics' and top and
                              top != 'basics'):
          found.append('%s imports %s' % (module, name))
  return found


def _cycles():
  """Every strongly connected group of project modules that import each
  other (directly or round a longer loop), lazy imports included."""
  graph = {}
  for top in PROJECT_TOPS:
    for module, path in _modules(top):
      graph[module] = {t for t in map(_project_module, _imports(path))
                       if t and t != module}
  index, low, stack, on_stack, groups = {}, {}, [], set(), []

  def visit(node):  # Tarjan's algorithm
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    for nxt in graph.get(node, ()):
      if nxt not in index:
        visit(nxt)
        low[node] = min(low[node], low[nxt])
      elif nxt in on_stack:
        low[node] = min(low[node], index[nxt])
    if low[node] == index[node]:
      group = set()
      while True:
        member = stack.pop()
        on_stack.discard(member)
        group.add(member)
        if member == node:
          break
      if len(group) > 1:
        groups.append(sorted(group))

  for node in sorted(graph):
    if node not in index:
      visit(node)
  return groups


def test_every_import_respects_the_layers():
  assert _violations() == []


def test_no_import_cycle_anywhere():
  assert _cycles() == []


def test_every_layer_has_a_folder_and_a_rule():
  folders = {_layer(m) for m, _ in _modules(PACKAGE)}
  assert folders == set(MAY_IMPORT) | {ENTRY}


# Modules that must load without TensorFlow, with all they import: the
# watchdog (it must work whatever TensorFlow is doing), the flags (checked
# before TensorFlow loads), the launcher (it runs where none is installed),
# the step loop and the decisions every layer reads.
TENSORFLOW_FREE = [m for m, _ in _modules(os.path.join(PACKAGE, 'liveness'))
                   ] + [PACKAGE + '.' + m for m in (
                       'contracts', 'test_hooks', 'config.flags',
                       'config.run_mode', 'variable_update.modes',
                       'variable_update.sync_kind', 'run.step_loop',
                       'run.train_dir_lock', 'cluster.launch.launcher')]


@pytest.mark.timeout(120)
def test_tensorflow_free_modules_load_no_tensorflow():
  script = ('import importlib, sys\n'
            'for name in sys.argv[1:]:\n'
            '  importlib.import_module(name)\n'
            '  assert "tensorflow" not in sys.modules, name\n')
  done = subprocess.run([sys.executable, '-c', script] + TENSORFLOW_FREE,
                        cwd=ROOT, capture_output=True, text=True, timeout=100)
  assert done.returncode == 0, done.stderr[-2000:]


def test_the_layer_check_sees_a_forbidden_import(tmp_path):
  """The check itself: a run module importing the cluster is caught."""
  bad = tmp_path / 'bad.py'
  bad.write_text('from tf_cnn_benchmarks.cluster import roles\n'
                 'def f():\n  from tf_cnn_benchmarks.cluster.watch import '
                 'watchdog\n')
  found = _violations([(PACKAGE + '.run.bad', str(bad))])
  assert len(found) == 2, found


def test_the_core_never_imports_the_tf2_engine(tmp_path):
  """The check itself: run/ reaching into an engine is caught."""
  bad = tmp_path / 'bad.py'
  bad.write_text('def f():\n  from tf_cnn_benchmarks.engine_tf2 import '
                 'engine\n  from tf_cnn_benchmarks.engine_graph import '
                 'engine\n')
  assert len(_violations([(PACKAGE + '.run.bad', str(bad))])) == 2


def test_test_hooks_are_reached_only_through_their_switch(tmp_path):
  """The check itself: product code importing a test hook's module (not
  the switch) is caught; the switch is allowed."""
  bad = tmp_path / 'bad.py'
  bad.write_text('from tf_cnn_benchmarks.test_hooks import fault_injection\n'
                 'from tf_cnn_benchmarks import test_hooks\n')
  found = _violations([(PACKAGE + '.cluster.task.bad', str(bad))])
  assert found == ['%s.cluster.task.bad (cluster.task) imports '
                   '%s.test_hooks.fault_injection (test_hooks)' % (
                       PACKAGE, PACKAGE)]


def test_the_cycle_check_sees_a_cycle(tmp_path, monkeypatch):
  """The check itself: two modules importing each other are a cycle."""
  monkeypatch.setattr(sys.modules[__name__], 'PROJECT_TOPS', ('pkg',))
  monkeypatch.setattr(sys.modules[__name__], 'ROOT', str(tmp_path))
  (tmp_path / 'pkg').mkdir()
  (tmp_path / 'pkg' / '__init__.py').write_text('')
  (tmp_path / 'pkg' / 'a.py').write_text('from pkg import b\n')
  (tmp_path / 'pkg' / 'b.py').write_text('def f():\n  from pkg import a\n')
  assert _cycles() == [['pkg.a', 'pkg.b']]


def test_the_cluster_modes_facts_live_in_one_table():
  """Every mode the flags accept is a row of variable_update/modes.py, and
  each manager class reads its facts from there."""
  from tf_cnn_benchmarks.config import flags
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
      ROOT, include=['%s*' % top for top in PROJECT_TOPS]))
  folders = set()
  for top in PROJECT_TOPS:
    for folder, _, files in os.walk(os.path.join(ROOT, top)):
      if any(f.endswith('.py') for f in files):
        folders.add(os.path.relpath(folder, ROOT).replace(os.sep, '.'))
  assert folders - found == set()


def test_launched_tasks_import_this_checkout():
  from tf_cnn_benchmarks.cluster.launch import process_groups  # pylint: disable=g-import-not-at-top
  first = process_groups.child_env()['PYTHONPATH'].split(os.pathsep)[0]
  assert os.path.isfile(os.path.join(first, PACKAGE, '__init__.py'))
