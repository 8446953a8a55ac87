"""Test-wide settings: quiet TensorFlow, repo root importable."""

import os
import sys

# Before TensorFlow is imported anywhere: keep its C++ INFO/WARNING lines out
# of test output (errors still show).
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)
