"""The environment variables that switch the test hooks on (read by the
switch, test_hooks/__init__.py, without loading any hook)."""

from results import injected_runs

# injected_slowdown.py: idle after each timed step (named in results/, which
# the tools that start benchmarks read too).
SLOWDOWN_ENV = injected_runs.ENV_VAR
# fault_injection.py: a fault in one task of a cluster.
FAULT_ENV = 'TF_CNN_BENCHMARKS_TEST_FAULT'
