#!/usr/bin/env python3
"""Run the benchmark from a checkout: python tf_cnn_benchmarks.py --model=...

The same entry point as the installed `tf_cnn_benchmarks` command.
"""

import sys

from tf_cnn_benchmarks import cli

if __name__ == '__main__':
  sys.exit(cli.main())
