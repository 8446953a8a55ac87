"""Timing statistics: the report's and the record's numbers, on known data."""

import math

import pytest

from tf_cnn_benchmarks.run import timing


def test_statistics_match_the_original_definitions():
  t = timing.StepTimes(images_per_step=64)
  for seconds in (0.5, 0.5, 1.0, 0.25):
    t.add(seconds, loss=1.0)
  speeds = [128.0, 128.0, 64.0, 256.0]
  assert t.mean_speed() == pytest.approx(64 / (2.25 / 4))
  mean = sum(speeds) / 4
  sd = math.sqrt(sum((s - mean) ** 2 for s in speeds) / 4)
  assert t.speed_uncertainty() == pytest.approx(sd / 2)
  # median 128; |deviations| = 0, 0, 64, 128 -> median 32. The tight
  # tolerance tells the original's 1.4826 from scipy's 1.482602...
  assert t.jitter() == pytest.approx(1.4826 * 32, rel=1e-9)
  assert t.median_step_time() == pytest.approx(0.5)


def test_jitter_of_an_odd_count_ignores_one_outlier():
  t = timing.StepTimes(images_per_step=100)
  for seconds in (1.0, 0.5, 0.25, 0.2, 0.001):
    t.add(seconds)
  # speeds 100, 200, 400, 500, 100000: median 400; |deviations| 300, 200,
  # 0, 100, 99600 -> median 200.
  assert t.jitter() == pytest.approx(1.4826 * 200, rel=1e-9)


def test_total_counts_the_whole_loop_and_every_worker():
  t = timing.StepTimes(images_per_step=10)
  for _ in range(4):
    t.add(0.1)
  t.timed_wall_time = 0.5   # gaps between steps count
  assert t.total_images_per_sec() == pytest.approx(80.0)
  assert t.total_images_per_sec(num_workers=3) == pytest.approx(240.0)


def test_empty_and_single_step_do_not_divide_by_zero():
  t = timing.StepTimes(images_per_step=10)
  assert t.mean_speed() == 0.0 and t.jitter() == 0.0
  t.add(0.2)
  assert t.speed_uncertainty() == 0.0
  assert t.total_images_per_sec() == 0.0
