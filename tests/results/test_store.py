"""results.store: loading records into a DataFrame, old versions, bad files."""

import json
import os

import pandas as pd
import pytest

from results import record_io
from results import store
from results.errors import UsageError
from tests.results.record_factory import make_record, write_record


def test_round_trip_keeps_values_and_samples(tmp_path):
  first = make_record(model='trivial', label='a', step_times=[0.1, 0.2, 0.3],
                      started_at='2025-01-01T00:00:00Z')
  second = make_record(model='resnet50', label='b', tf_version='2.20.0',
                       batch_size_per_device=64, started_at='2025-01-02T00:00:00Z')
  write_record(tmp_path, first)
  write_record(tmp_path / 'nested', second)
  frame = store.load_runs([tmp_path])
  assert len(frame) == 2
  row = frame[frame['run_id'] == first['run_id']].iloc[0]
  assert row['config.model'] == 'trivial'
  assert row['label'] == 'a'
  assert row['environment.tf_version'] == '2.21.0'
  assert row['timing.step_times_sec'] == [0.1, 0.2, 0.3]
  assert row['summary.images_per_sec'] == pytest.approx(32 / 0.2)
  assert row['flags.batch_size'] == 32
  assert row['source_dir'] == os.path.abspath(tmp_path)
  other = frame[frame['run_id'] == second['run_id']].iloc[0]
  assert other['config.batch_size_per_device'] == 64
  assert list(frame['run_id']) == [first['run_id'], second['run_id']]  # by time
  assert frame.attrs['skipped'] == []


def test_version_0_record_is_upgraded(tmp_path):
  record = make_record(label='ignored')
  for key in ('cluster_run_id', 'label', 'schema_version'):
    del record[key]
  record['summary']['total_images_per_sec'] = record['summary'].pop(
      'images_per_sec')
  (tmp_path / 'old.json').write_text(json.dumps(record))
  frame = store.load_runs(tmp_path)
  assert len(frame) == 1
  row = frame.iloc[0]
  assert row['schema_version'] == record_io.CURRENT_SCHEMA_VERSION
  assert row['label'] == ''
  assert row['summary.images_per_sec'] == pytest.approx(320.0)
  assert 'summary.total_images_per_sec' not in frame.columns


def test_bad_files_are_skipped_with_a_warning(tmp_path):
  write_record(tmp_path, make_record())
  (tmp_path / 'truncated.json').write_text('{"schema_version": 1, "con')
  (tmp_path / 'future.json').write_text(json.dumps(
      dict(make_record(), schema_version=99)))
  (tmp_path / 'list.json').write_text('[1, 2]')
  (tmp_path / '.half-written.json.tmp').write_text('{')  # ignored silently
  with pytest.warns(store.UnreadableRecordWarning) as caught:
    frame = store.load_runs([tmp_path])
  assert len(frame) == 1
  messages = ' '.join(str(w.message) for w in caught)
  assert 'truncated.json' in messages and 'not valid JSON' in messages
  assert 'newer than this checkout' in messages
  assert sorted(os.path.basename(p) for p, _ in frame.attrs['skipped']) == [
      'future.json', 'list.json', 'truncated.json']


def test_missing_folder_and_empty_folder(tmp_path):
  with pytest.raises(UsageError, match='does not exist'):
    store.load_runs([tmp_path / 'nope'])
  frame = store.load_runs([tmp_path])
  assert len(frame) == 0 and 'summary.images_per_sec' in frame.columns
  with pytest.raises(UsageError, match='no run records'):
    store.require_runs(frame, [tmp_path])


def test_csv_and_parquet_export(tmp_path):
  write_record(tmp_path, make_record(step_times=[0.1, 0.2]))
  write_record(tmp_path, make_record(model='resnet50', status='failed'))
  frame = store.load_runs([tmp_path])
  store.export_csv(frame, tmp_path / 'out' / 'runs.csv')
  back = pd.read_csv(tmp_path / 'out' / 'runs.csv')
  assert len(back) == 2
  assert json.loads(back.loc[back['config.model'] == 'trivial',
                             'timing.step_times_sec'].iloc[0]) == [0.1, 0.2]
  if not store.parquet_available():
    with pytest.raises(UsageError, match='pyarrow'):
      store.export_parquet(frame, tmp_path / 'runs.parquet')
    return
  store.export_parquet(frame, tmp_path / 'runs.parquet')
  back = pd.read_parquet(tmp_path / 'runs.parquet')
  assert sorted(back['config.model']) == ['resnet50', 'trivial']
  assert list(back.loc[back['config.model'] == 'trivial',
                       'timing.step_times_sec'].iloc[0]) == [0.1, 0.2]


def test_parquet_without_pyarrow_says_what_to_install(tmp_path, monkeypatch):
  monkeypatch.setattr(store, 'parquet_available', lambda: False)
  with pytest.raises(UsageError, match='pip install pyarrow'):
    store.export_parquet(pd.DataFrame({'a': [1]}), tmp_path / 'x.parquet')


def test_atomic_write_leaves_no_temporaries(tmp_path):
  path = tmp_path / 'r.json'
  record_io.write_record_atomically(path, {'a': 1})
  record_io.write_record_atomically(path, {'a': 2})
  assert json.loads(path.read_text()) == {'a': 2}
  assert os.listdir(tmp_path) == ['r.json']


def test_dtypes_missing_rates_and_one_column_family(tmp_path):
  write_record(tmp_path, make_record(step_times=[0.1, 0.2],
                                     started_at='2025-01-01T00:00:00Z'))
  write_record(tmp_path, make_record(status='failed',
                                     started_at='2025-01-02T00:00:00+00:00'))
  old = make_record(status='interrupted', started_at='2025-01-03T00:00:00Z')
  old['summary']['images_per_sec'] = 0.0   # as records before nulls said
  write_record(tmp_path, old)
  frame = store.load_runs([tmp_path])
  for column in ('started_at', 'finished_at'):
    assert pd.api.types.is_datetime64_any_dtype(frame[column]), column
    assert str(frame[column].dt.tz) == 'UTC'
  assert frame['started_at'].iloc[1] == pd.Timestamp('2025-01-02', tz='UTC')
  for column in ('summary.images_per_sec', 'summary.top_1_accuracy',
                 'timing.timed_wall_time_sec'):
    assert frame[column].dtype == 'float64', column
  # Failed and interrupted runs have no throughput: missing, not 0.0, so
  # the mean is the successful run's alone.
  assert frame['summary.images_per_sec'].isna().tolist() == [False, True,
                                                             True]
  assert frame['summary.images_per_sec'].mean() == pytest.approx(32 / 0.15)
  # `failure` (null for the ok run) is not kept beside `failure.type` etc.
  families = {c.rsplit('.', 1)[0] for c in frame.columns if '.' in c}
  assert not families & set(frame.columns), families & set(frame.columns)
  assert frame['failure.message'].tolist()[1:] == ['it broke', 'it broke']


def test_written_files_get_the_users_umask(tmp_path):
  previous = os.umask(0o027)
  try:
    record_io.write_record_atomically(tmp_path / 'a.json', {'a': 1})
    os.umask(0o022)
    record_io.write_record_atomically(tmp_path / 'b.json', {'a': 1})
    store.export_csv(pd.DataFrame({'a': [1]}), tmp_path / 'runs.csv')
  finally:
    os.umask(previous)
  assert (tmp_path / 'a.json').stat().st_mode & 0o777 == 0o640
  assert (tmp_path / 'b.json').stat().st_mode & 0o777 == 0o644
  assert (tmp_path / 'runs.csv').stat().st_mode & 0o777 == 0o644
