"""Which TensorFlow release made a configuration slower (`tf_cnn_benchmarks
bisect`).

Modules (each has one job):
  releases  the releases between two versions, from the package index (pip)
  search    the bisection: ranges, what each step's verdicts mean (no runs)
  command   `tf_cnn_benchmarks bisect`: venvs, runs, printed steps, result
"""
