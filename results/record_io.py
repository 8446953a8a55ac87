"""Read, upgrade and write one run record (see results/SCHEMA.md).

Kept free of pandas so the benchmark driver can import it cheaply:

  from results.record_io import write_record_atomically

Schema versions this reader understands:
  0  the pre-release layout: no `cluster_run_id`, no `label`, and the headline
     number was called `summary.total_images_per_sec`. A record without a
     `schema_version` key is taken as version 0.
  1  no `phases`.
  2  the current layout (SCHEMA.md): `phases`, the seconds of each phase.
A record newer than CURRENT_SCHEMA_VERSION is refused: this checkout is too old
to know what its fields mean.
"""

import copy
import datetime
import json
import re

from basics import atomic_files

CURRENT_SCHEMA_VERSION = 2

# Top-level objects every usable record has, whatever its version.
REQUIRED_OBJECTS = ('config', 'summary')


class UnreadableRecord(ValueError):
  """The file is not a run record this reader can use; the message says why."""


def _upgrade_v0_to_v1(record):
  record.setdefault('cluster_run_id', None)
  record.setdefault('label', '')
  summary = record.get('summary') or {}
  if 'total_images_per_sec' in summary:
    summary.setdefault('images_per_sec', summary.pop('total_images_per_sec'))
  record['summary'] = summary
  record['schema_version'] = 1
  return record


def _upgrade_v1_to_v2(record):
  record.setdefault('phases', {})  # not measured then
  record['schema_version'] = 2
  return record


# from_version -> function upgrading a record to from_version + 1.
_UPGRADES = {0: _upgrade_v0_to_v1, 1: _upgrade_v1_to_v2}


def upgrade_record(record):
  """Returns a copy of record in the current schema version."""
  if not isinstance(record, dict):
    raise UnreadableRecord('top level is %s, not a JSON object'
                           % type(record).__name__)
  record = copy.deepcopy(record)
  version = record.get('schema_version', 0)
  if not isinstance(version, int) or isinstance(version, bool) or version < 0:
    raise UnreadableRecord('schema_version %r is not a version number'
                           % (version,))
  if version > CURRENT_SCHEMA_VERSION:
    raise UnreadableRecord(
        'schema_version %d is newer than this checkout understands (%d); '
        'update the checkout to read it' % (version, CURRENT_SCHEMA_VERSION))
  record['schema_version'] = version
  while record['schema_version'] < CURRENT_SCHEMA_VERSION:
    record = _UPGRADES[record['schema_version']](record)
  for key in REQUIRED_OBJECTS:
    if not isinstance(record.get(key), dict):
      raise UnreadableRecord('missing the %r object' % key)
  _missing_rates_of_unfinished_runs(record)
  return record


# Throughputs a run only has when it finished well.
RATE_FIELDS = ('images_per_sec', 'worker_images_per_sec',
               'images_per_sec_mean_of_steps')


def _missing_rates_of_unfinished_runs(record):
  """Records written before failed runs' rates were null said 0.0; read
  them as missing too, so every reader sees one convention (SCHEMA.md)."""
  if record.get('status') == 'ok':
    return
  summary = record['summary']
  for field in RATE_FIELDS:
    if summary.get(field) == 0:
      summary[field] = None


def read_record(path):
  """Reads one record file and upgrades it; raises UnreadableRecord."""
  try:
    with open(path, 'r', encoding='utf-8') as record_file:
      record = json.load(record_file)
  except (OSError, UnicodeDecodeError) as error:
    raise UnreadableRecord('cannot read: %s' % error) from error
  except json.JSONDecodeError as error:
    raise UnreadableRecord('not valid JSON: %s' % error) from error
  return upgrade_record(record)


def write_record_atomically(path, record):
  """Writes record as JSON to path; readers see the old file or the new one.

  The temporary file lives in the same folder (so os.replace is atomic) and is
  hidden with a .tmp suffix, so loaders scanning *.json never pick it up.
  """
  text = json.dumps(record, indent=2, sort_keys=True, allow_nan=True) + '\n'
  atomic_files.write_text_atomically(path, text)


# What record_file_name makes: stamp_model_job-index_run.json. A plain
# file name (no separator, no '..'), so a name that came from elsewhere
# (a remote task's guard) can be joined to --result_dir safely.
RECORD_FILE_NAME_RE = re.compile(
    r'^[0-9]{8}T[0-9]{6}Z_[A-Za-z0-9_.-]+_[a-z]+-[0-9]+_[0-9a-f]{8}\.json$')


def is_record_file_name(name):
  return bool(RECORD_FILE_NAME_RE.match(name)) and '..' not in name


def record_file_name(rec):
  stamp = datetime.datetime.fromisoformat(rec['started_at']).strftime(
      '%Y%m%dT%H%M%SZ')
  job = rec['config']['job_name'] or 'local'
  task = rec['config']['task_index'] or 0
  return '%s_%s_%s-%d_%s.json' % (stamp, rec['config']['model'], job, task,
                                  rec['run_id'][:8])
