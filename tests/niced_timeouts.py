"""A pytest plugin for the suite's niced compute phase (tests/run_suite.py
loads it there with ``-p``): every wall-clock bound a test sets below the
suite's default (setup.cfg's ``timeout``, 900 s) is raised to that default,
there only. Per-test ``@pytest.mark.timeout`` guards are raised here;
bounds a test gives a child process or a deadline take ``wall_bound()``.

Why: such a bound is a hang guard in wall time, and a nice-19 process's
wall time is mostly other processes' (the kernel gives it ~1.5% of a core
that a nice-0 one wants; its children inherit its niceness). In CI at
3cf2e9d, tests/preprocessing/test_bad_input.py::test_corrupt_record, 2 s
alone, ran past its 60 s beside the timed phase and failed. Raised to the
default, a hung test still fails, later; a starved one no longer does.
Tests whose verdict rests on seconds belong in the timed phase, where this
is not loaded.
"""

import pytest

# The suite's default timeout in seconds while this is loaded as a plugin
# (pytest_configure); None elsewhere, where every bound stands as written.
_raised_to = None


def wall_bound(seconds):
  """``seconds``, or the suite's default where this plugin raises bounds
  and it is larger."""
  if _raised_to is None:
    return seconds
  return max(seconds, _raised_to)


def pytest_configure(config):
  global _raised_to
  # Without a default (0: none) every test keeps its own bounds.
  _raised_to = float(config.getini('timeout') or 0) or None


def pytest_collection_modifyitems(items):
  for item in items:
    marker = item.get_closest_marker('timeout')
    if marker is None:
      continue
    seconds = marker.args[0] if marker.args else marker.kwargs.get('timeout')
    # 0 (no timeout at all) stays so.
    if not seconds:
      continue
    raised = wall_bound(float(seconds))
    if raised == float(seconds):
      continue
    kwargs = {k: v for k, v in marker.kwargs.items() if k != 'timeout'}
    # Put first, so it is the closest timeout marker pytest-timeout reads.
    item.add_marker(pytest.mark.timeout(raised, **kwargs), append=False)
