"""Load every run record under some folders into one pandas DataFrame.

  df = load_runs(['results/runs', 'other/runs'])

One row per record file, columns flattened with dots: `config.model`,
`environment.tf_version`, `summary.images_per_sec`, `flags.batch_size`,
`failure.message`, ... The raw samples stay as list cells
(`timing.step_times_sec`, `timing.warmup_step_times_sec`, `timing.step_losses`).
Two columns say where a row came from: `path` (the file) and `source_dir` (the
folder argument it was found under, so two folders can be compared).

Older schema versions are upgraded on load (results.record_io). A file that
cannot be used is skipped with an UnreadableRecordWarning; the skipped files
and reasons are also in `df.attrs['skipped']`.

Exports: export_csv (list cells as JSON) and export_parquet (needs pyarrow).
"""

import argparse
import importlib.util
import io
import json
import os
import sys
import warnings

import pandas as pd

from basics import atomic_files
from results import record_io
from results.errors import UsageError, report_usage_error
# Re-exported: the driver may import it from here or (lighter) record_io.
from results.record_io import write_record_atomically  # noqa: F401

# Columns every frame has, even when no record sets them, so code reading a
# frame never needs to guard against a missing column.
CONFIG_FIELDS = (
    'model', 'data_name', 'synthetic', 'data_dir', 'mode',
    'batch_size_per_device', 'global_batch_size', 'num_devices', 'device',
    'data_format', 'variable_update', 'optimizer', 'num_batches',
    'num_warmup_batches', 'use_fp16', 'compute_dtype', 'xla_compile',
    'num_workers', 'num_ps', 'job_name', 'task_index', 'cross_replica_sync',
    'sync_updates')
ENVIRONMENT_FIELDS = (
    'tf_version', 'tf_git_version', 'tf_files_sha256', 'python_version',
    'numpy_version',
    'harness_version', 'harness_commit', 'harness_commit_time', 'cpu_model',
    'cpu_count', 'cpu_affinity', 'accelerator', 'hostname', 'platform')
TIMING_FIELDS = ('step_times_sec', 'warmup_step_times_sec',
                 'timed_wall_time_sec', 'step_losses')
SUMMARY_FIELDS = (
    'images_per_sec', 'worker_images_per_sec', 'images_per_sec_mean_of_steps',
    'images_per_sec_stddev_err', 'jitter', 'median_step_time_sec', 'num_steps',
    'final_loss', 'top_1_accuracy', 'top_5_accuracy', 'num_eval_examples',
    'peak_rss_mb', 'time_to_target_sec', 'epochs_to_target',
    'steps_to_target')
# Where the runner ran the run (SCHEMA.md `sequence`): which runs pair up.
SEQUENCE_FIELDS = ('plan', 'round', 'position', 'config')
TOP_LEVEL_FIELDS = ('schema_version', 'run_id', 'cluster_run_id', 'started_at',
                    'finished_at', 'status', 'label', 'injected_slowdown')
TIME_COLUMNS = ('started_at', 'finished_at')
# Summary and timing numbers: float64 with NaN for missing (a failed run's
# throughputs are null in its record; SCHEMA.md).
NUMBER_COLUMNS = tuple('summary.' + name for name in SUMMARY_FIELDS) + (
    'timing.timed_wall_time_sec', 'injected_slowdown')
LIST_COLUMNS = tuple('timing.' + name for name in
                     ('step_times_sec', 'warmup_step_times_sec', 'step_losses'))
KNOWN_COLUMNS = (
    ('path', 'source_dir') + TOP_LEVEL_FIELDS
    + tuple('config.' + name for name in CONFIG_FIELDS)
    + tuple('environment.' + name for name in ENVIRONMENT_FIELDS)
    + tuple('timing.' + name for name in TIMING_FIELDS)
    + tuple('summary.' + name for name in SUMMARY_FIELDS)
    + tuple('sequence.' + name for name in SEQUENCE_FIELDS)
    + ('failure.type', 'failure.message', 'failure.task', 'failure.hint'))


class UnreadableRecordWarning(UserWarning):
  """A record file was skipped; the message names the file and the reason."""


def find_record_files(path):
  """Record files under path (a folder, searched recursively, or one file)."""
  if os.path.isfile(path):
    return [path]
  found = []
  for folder, subfolders, files in os.walk(path):
    # Hidden folders are a run's own while it runs (results/runner.py).
    subfolders[:] = sorted(d for d in subfolders if not d.startswith('.'))
    for name in sorted(files):
      # Hidden files are temporaries of an atomic write in progress.
      if name.endswith('.json') and not name.startswith('.'):
        found.append(os.path.join(folder, name))
  return found


def _check_paths_exist(paths):
  missing = [path for path in paths if not os.path.exists(path)]
  if missing:
    raise UsageError(
        'result folder %s does not exist. Pass the folder that a benchmark '
        'run wrote with --result_dir (default results/runs/), or run a '
        'benchmark first.' % ', '.join(repr(path) for path in missing))


def load_runs(paths):
  """Loads every record under paths (folders or files) into one DataFrame.

  Raises UsageError if a path does not exist. A folder without records gives
  an empty frame (with all known columns); see require_runs.
  """
  if isinstance(paths, (str, os.PathLike)):
    paths = [paths]
  paths = [os.fspath(path) for path in paths]
  _check_paths_exist(paths)
  records, files, sources, skipped = [], [], [], []
  for source in paths:
    for file_path in find_record_files(source):
      try:
        record = record_io.read_record(file_path)
      except record_io.UnreadableRecord as error:
        skipped.append((file_path, str(error)))
        warnings.warn('skipping %s: %s' % (file_path, error),
                      UnreadableRecordWarning, stacklevel=2)
        continue
      records.append(record)
      files.append(os.path.abspath(file_path))
      sources.append(os.path.abspath(source))
  frame = pd.json_normalize(records)
  frame['path'] = files
  frame['source_dir'] = sources
  frame = _without_duplicate_families(frame)
  extra = [column for column in frame.columns if column not in KNOWN_COLUMNS]
  frame = frame.reindex(columns=list(KNOWN_COLUMNS) + sorted(extra))
  for column in LIST_COLUMNS:
    # Missing samples become empty lists, so len() and iteration always work.
    frame[column] = [value if isinstance(value, list) else []
                     for value in frame[column]]
  frame = _with_dtypes(frame)
  if len(frame):
    frame = frame.sort_values(['started_at', 'path'], na_position='last',
                              kind='stable').reset_index(drop=True)
  frame.attrs['skipped'] = skipped
  return frame


def _without_duplicate_families(frame):
  """Drops a column X when columns X.* hold its contents.

  json_normalize flattens an object into X.a, X.b, ... but a record whose X
  is null adds a column X of its own (e.g. `failure` beside `failure.type`
  when some runs failed and others did not). Such an X only ever holds nulls
  (a non-null X is flattened into X.*), so dropping it loses nothing and
  leaves one column family per object.
  """
  families = {column.rsplit('.', 1)[0] for column in frame.columns
              if '.' in column}
  duplicates = [column for column in frame.columns if column in families
                and frame[column].isna().all()]
  return frame.drop(columns=duplicates)


def _with_dtypes(frame):
  """Times as UTC datetimes; numeric columns numeric (missing -> NaN).

  Columns that no record sets come out of reindex as object columns of NaN;
  the known number and time columns get their real dtype whatever the
  records held, so `frame['started_at'].max()` or a mean just work.
  """
  for column in TIME_COLUMNS:
    frame[column] = pd.to_datetime(frame[column], utc=True, format='ISO8601',
                                   errors='coerce')
  for column in NUMBER_COLUMNS:
    frame[column] = pd.to_numeric(frame[column], errors='coerce').astype(
        'float64')
  return frame


def require_runs(frame, paths):
  """Raises UsageError when nothing was loaded; says what to do instead."""
  if len(frame):
    return frame
  skipped = frame.attrs.get('skipped', [])
  detail = (' %d file(s) there could not be read (see the warnings above).'
            % len(skipped)) if skipped else ''
  raise UsageError(
      'no run records (*.json) were found under %s.%s Run a benchmark with '
      '--result_dir pointing there (or `tf_cnn_benchmarks suite`), or pass '
      'the folder that holds the records.'
      % (', '.join(repr(os.fspath(p)) for p in paths), detail))


def _cell_to_text(value):
  if isinstance(value, (list, dict)):
    return json.dumps(value)
  return value


def export_csv(frame, path):
  """Writes the frame as CSV (list cells as JSON text), atomically."""
  text_frame = frame.copy()
  for column in text_frame.columns:
    if text_frame[column].dtype == object:
      text_frame[column] = text_frame[column].map(_cell_to_text)
  buffer = io.StringIO()
  text_frame.to_csv(buffer, index=False)
  atomic_files.write_text_atomically(path, buffer.getvalue())


def parquet_available():
  return importlib.util.find_spec('pyarrow') is not None


def _parquet_ready(frame):
  """Object columns holding mixed scalar types become text (Parquet needs
  one type per column); list columns stay lists of floats."""
  ready = frame.copy()
  for column in ready.columns:
    if column in LIST_COLUMNS:
      ready[column] = [[float(x) for x in value] for value in ready[column]]
      continue
    if ready[column].dtype != object:
      continue
    kinds = {type(value) for value in ready[column] if value is not None}
    if len(kinds) > 1 or kinds & {list, dict}:
      ready[column] = ready[column].map(
          lambda value: None if value is None else (
              json.dumps(value) if isinstance(value, (list, dict))
              else str(value)))
  return ready


def export_parquet(frame, path):
  """Writes the frame as Parquet atomically; UsageError without pyarrow."""
  if not parquet_available():
    raise UsageError(
        'Parquet export needs pyarrow, which is not installed in this Python. '
        'Install it with `pip install pyarrow`, or export CSV instead.')
  ready = _parquet_ready(frame)
  atomic_files.write_with_writer_atomically(
      path, lambda temp_path: ready.to_parquet(temp_path, index=False))


def main(argv=None):
  """python -m results.store DIR... [--csv FILE] [--parquet FILE]"""
  argv = list(sys.argv if argv is None else argv)
  parser = argparse.ArgumentParser(
      prog=argv[0], description='Load run records and export them as a table.')
  parser.add_argument('paths', nargs='+', help='result folders or files')
  parser.add_argument('--csv', help='write a CSV file here')
  parser.add_argument('--parquet', help='write a Parquet file here')
  args = parser.parse_args(argv[1:])
  try:
    frame = require_runs(load_runs(args.paths), args.paths)
    if args.csv:
      export_csv(frame, args.csv)
    if args.parquet:
      export_parquet(frame, args.parquet)
  except UsageError as error:
    return report_usage_error(error)
  print('%d run(s) loaded, %d file(s) skipped'
        % (len(frame), len(frame.attrs.get('skipped', []))))
  return 0


if __name__ == '__main__':
  sys.exit(main())
