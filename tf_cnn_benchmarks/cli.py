"""Command-line entry: the benchmark itself, or one of the tool commands.

`tf_cnn_benchmarks --model=resnet50 ...` runs a benchmark exactly as the
original tool's users typed it. A first word naming a tool command runs that
command instead (each is a module with a ``main(argv) -> exit code``):

  build-dataset   preprocessing/build_dataset.py
  compare         results/compare.py
  dashboard       results/dashboard.py
  history         results/history/command.py (steps over time)
  suite           results/suite.py (repeats, suites)
  matrix          results/matrix.py (several TF versions)
  bisect          results/bisect/command.py (which TF release)
  launch          tf_cnn_benchmarks/cluster/launch/launcher.py
  k8s             tf_cnn_benchmarks/cluster/launch/k8s_manifests.py
"""

import importlib
import sys

# command word -> module whose main(argv) implements it.
TOOL_COMMANDS = {
    'build-dataset': 'preprocessing.build_dataset',
    'compare': 'results.compare',
    'dashboard': 'results.dashboard',
    'history': 'results.history.command',
    'suite': 'results.suite',
    'matrix': 'results.matrix',
    'bisect': 'results.bisect.command',
    'launch': 'tf_cnn_benchmarks.cluster.launch.launcher',
    'k8s': 'tf_cnn_benchmarks.cluster.launch.k8s_manifests',
}


def main(argv=None):
  argv = list(sys.argv if argv is None else argv)
  if len(argv) > 1 and argv[1] in TOOL_COMMANDS:
    module = importlib.import_module(TOOL_COMMANDS[argv[1]])
    return module.main([argv[0] + ' ' + argv[1]] + argv[2:])
  # First, before the flags and TensorFlow load: a signal while they do
  # must stop the run with 130, not kill it silently.
  from tf_cnn_benchmarks.liveness import early_signals  # pylint: disable=g-import-not-at-top
  early_signals.install()
  from tf_cnn_benchmarks import benchmark_main  # pylint: disable=g-import-not-at-top
  return benchmark_main.main(argv)


if __name__ == '__main__':
  sys.exit(main())
