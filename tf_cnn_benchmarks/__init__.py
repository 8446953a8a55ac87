"""tf_cnn_benchmarks: the classic CNN training benchmark, rebuilt."""

import os

# The folder holding this package and its sibling libraries (models,
# preprocessing, results): the checkout, or site-packages when installed.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
