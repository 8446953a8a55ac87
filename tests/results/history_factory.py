"""Histories of real run records (record_factory) with planted steps."""

import datetime
import hashlib

import numpy as np

from tests.results.record_factory import make_record, write_record

START = datetime.datetime(2025, 3, 1, tzinfo=datetime.timezone.utc)
NOISE = 0.015     # run-to-run noise (sd, relative), as on this machine


def sha(index):
  return hashlib.sha1(b'commit %d' % index).hexdigest()


def write_history(folder, speeds, rng, runs_per_point=3, versions=None,
                  commits=True, noise=NOISE, **config):
  """Runs in time order: runs_per_point runs at each point (a commit, or a TF
  version from `versions`), throughput speeds[point] times noise."""
  run = 0
  for point, speed in enumerate(speeds):
    for _ in range(runs_per_point):
      ips = speed * (1 + rng.normal(0, noise))
      batch = config.get('batch_size_per_device', 32)
      steps = batch / ips * np.ones(10)
      record = make_record(
          step_times=steps, started_at=(START + datetime.timedelta(
              hours=run)).strftime('%Y-%m-%dT%H:%M:%SZ'),
          tf_version=versions[point] if versions else '2.21.0', **config)
      if commits:
        record['environment']['harness_commit'] = sha(point)
        record['environment']['harness_commit_time'] = (
            START + datetime.timedelta(days=point)).isoformat()
      write_record(folder, record)
      run += 1
