"""Puts the runs of each configuration in order: by time, harness commit or
TensorFlow version, and names a run's place in that order for humans.

A history is one configuration's runs in order (a series). Which runs share
a series depends on the order:

* `time`: every run of the configuration, whatever changed between them
  (the question is "when did it get slower?").
* `commit`: one series per configuration *and TF version*, so a TensorFlow
  upgrade between two runs is never blamed on the harness commit beside it.
  Commits are ordered by their committer date (`harness_commit_time`), so the
  repository is not needed; runs at one commit keep their start order.
* `tf_version`: one series per configuration, versions in PEP 440 order
  (2.9 before 2.10; packaging.version via comparison.version_sort_key).

A step can only fall between two runs of different *blocks*: the same
commit (or version) measured twice cannot have changed in between.
"""

import dataclasses
import math

import pandas as pd

from results import comparison as comparison_lib

ORDERS = ('time', 'commit', 'tf_version')
TF_VERSION = 'environment.tf_version'
COMMIT = 'environment.harness_commit'
COMMIT_TIME = 'environment.harness_commit_time'
HARNESS_VERSION = 'environment.harness_version'
SHORT_SHA = 7


@dataclasses.dataclass
class Series:
  key: tuple            # comparison.config_key of its runs
  tf_version: str       # the version all its runs share (order commit), or None
  runs: list            # run dicts (comparison.usable_runs), in order
  blocks: list          # per run: what a step cannot split


def timestamp(value):
  """A record's ISO-8601 text (or a pandas/datetime value) as a UTC
  pd.Timestamp; None when missing or unreadable."""
  if value is None:
    return None
  try:
    stamp = pd.Timestamp(value)
  except (ValueError, TypeError):
    return None
  if pd.isna(stamp):
    return None
  return stamp.tz_localize('UTC') if stamp.tzinfo is None else stamp.tz_convert(
      'UTC')


def _started(run):
  stamp = timestamp(run.get('started_at'))
  # Runs without a start time sort last, still in a fixed order (path).
  return (stamp is None, stamp.value if stamp is not None else 0,
          str(run.get('path')))


def cell_text(value):
  """A frame cell as text; None for missing (None, NaN, empty)."""
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return None
  return str(value) or None


def commit_of(run):
  return cell_text(run.get(COMMIT))


def short_commit(run):
  """The commit's short sha; for records without harness_commit the git
  describe text they have (e.g. 925768e-dirty), else 'unknown'."""
  commit = commit_of(run)
  if commit:
    return commit[:SHORT_SHA]
  return cell_text(run.get(HARNESS_VERSION)) or 'unknown'


def version_of(run):
  return cell_text(run.get(TF_VERSION)) or 'unknown'


def _has_commit(run):
  return commit_of(run) is not None and timestamp(run.get(COMMIT_TIME)) is not None


def _sort_key(run, order):
  if order == 'commit':
    return (timestamp(run.get(COMMIT_TIME)).value, commit_of(run)) + _started(run)
  if order == 'tf_version':
    return (comparison_lib.version_sort_key(version_of(run)),) + _started(run)
  return _started(run)


def _block(run, order, position):
  if order == 'commit':
    return commit_of(run)
  if order == 'tf_version':
    return version_of(run)
  return position   # by time every run is its own block


def build_series(runs, order):
  """(list of Series, runs left out): the runs grouped and ordered.

  Order `commit` leaves out runs whose record names no harness commit
  (older records, or runs outside a git checkout).
  """
  if order not in ORDERS:
    raise ValueError('unknown order %r' % order)
  left_out = 0
  groups = {}
  for run in runs:
    if order == 'commit' and not _has_commit(run):
      left_out += 1
      continue
    version = version_of(run) if order == 'commit' else None
    groups.setdefault((comparison_lib.config_key(run), version), []).append(run)
  series = []
  for (key, version), members in sorted(
      groups.items(),
      key=lambda kv: (comparison_lib.sortable_key(kv[0][0]),
                      comparison_lib.version_sort_key(kv[0][1] or ''))):
    members.sort(key=lambda run: _sort_key(run, order))
    series.append(Series(
        key=key, tf_version=version, runs=members,
        blocks=[_block(run, order, i) for i, run in enumerate(members)]))
  return series, left_out


def started_text(run):
  stamp = timestamp(run.get('started_at'))
  return stamp.strftime('%Y-%m-%d %H:%M') if stamp is not None else 'unknown time'


def _change(what, before, after, separator):
  return (('%s %s' % (what, before)) if before == after
          else '%s %s%s%s' % (what, before, separator, after))


def step_place(before, after, order):
  """Where a step happened, between the last run before it and the first
  run after: the TF versions and commits (git range syntax, ready for
  `git log A..B`), and for order time the two runs' start times."""
  parts = [_change('TF', version_of(before), version_of(after), ' -> '),
           _change('commit', short_commit(before), short_commit(after), '..')]
  if order == 'time':
    parts.append('runs of %s and %s' % (started_text(before),
                                         started_text(after)))
  return ', '.join(parts)


def series_span(series, order):
  """'TF 2.9.1 .. 2.21.0' or 'commits 1a2b3c4 .. 5d6e7f8' or the dates."""
  first, last = series.runs[0], series.runs[-1]
  if order == 'tf_version':
    return 'TF %s .. %s' % (version_of(first), version_of(last))
  if order == 'commit':
    return 'commits %s .. %s' % (short_commit(first), short_commit(last))
  return '%s .. %s' % (started_text(first), started_text(last))


def series_title(series, fields):
  """The configuration, naming only the fields that vary among all series."""
  title = comparison_lib.describe_config(series.key, fields)
  if series.tf_version is not None:
    title += ', TF %s' % series.tf_version
  return title
