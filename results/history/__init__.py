"""History of runs and the steps in it (`tf_cnn_benchmarks history`).

Modules (each has one job):
  ordering       runs of each configuration in order: time, commit, TF version
  change_points  the steps of one series (ruptures PELT, judged by stats.py)
  analysis       every series of some records with its steps
  command        `tf_cnn_benchmarks history`: the printed report, exit code
  chart          one series as a PNG (points, segment medians, steps)
  page           the dashboard's history.html
"""
