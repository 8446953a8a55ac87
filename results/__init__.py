"""Results side of the benchmark: load run records, compare, run suites, plot.

Modules (each has one job):
  record_io    read/upgrade/write one run record (no pandas: the driver uses it)
  store        load every record under some folders into one DataFrame
  stats        Mann-Whitney test and Hodges-Lehmann ratio estimate (numpy only)
  comparison   group runs by configuration and compare two groups
  tables       render a comparison as Markdown or HTML
  compare      `tf_cnn_benchmarks compare` command
  suite_file   parse a TOML suite file
  runner       run benchmark processes one by one, one line per run
  suite        `tf_cnn_benchmarks suite` command
  venvs        cached virtual environments, one per TensorFlow version
  matrix       `tf_cnn_benchmarks matrix` command
  plots        matplotlib charts (Agg backend)
  dashboard    `tf_cnn_benchmarks dashboard` command (static HTML + PNGs)
  history/     `tf_cnn_benchmarks history`: steps over a history of runs, and
               the dashboard's history page
"""
