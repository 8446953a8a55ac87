"""A pytest plugin for the suite's niced compute phase (tests/run_suite.py
loads it there with ``-p``): every per-test timeout below the suite's
default (setup.cfg's ``timeout``) is raised to that default.

Why: a test's ``@pytest.mark.timeout(60)`` is a hang guard in wall time,
and a nice-19 process's wall time is mostly other processes' (the kernel
gives it ~1.5% of a core that a nice-0 one wants). In CI at 3cf2e9d,
tests/preprocessing/test_bad_input.py::test_corrupt_record, 2 s alone, ran
past its 60 s beside the timed phase and failed. Raised to the default, a
hung test still fails, later; a starved one no longer does. Tests whose
verdict rests on seconds belong in the timed phase, where this is not
loaded.
"""

import pytest


def pytest_collection_modifyitems(config, items):
  default = float(config.getini('timeout') or 0)
  for item in items:
    marker = item.get_closest_marker('timeout')
    if marker is None:
      continue
    seconds = marker.args[0] if marker.args else marker.kwargs.get('timeout')
    # Without a default (0: none) a test keeps its own guard.
    if seconds is None or not 0 < float(seconds) < default:
      continue
    kwargs = {k: v for k, v in marker.kwargs.items() if k != 'timeout'}
    # Put first, so it is the closest timeout marker pytest-timeout reads.
    item.add_marker(pytest.mark.timeout(default, **kwargs), append=False)
