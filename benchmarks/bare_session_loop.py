#!/usr/bin/env python3
"""The floor for the harness's overhead: the harness's own graph, trained by
a bare ``session.run(train_op)`` loop with nothing else around it.

The graph, session config and initialisation are the harness's (same flags,
same code: run_config.resolve, model_graph.build, run_config.session_config);
only the step loop differs: no per-step timing, no report rows, and no
fetched loss unless --fetch_loss (the harness fetches the reported loss every
step; computing it can cost more than the harness's Python does). Prints one
JSON line with images/sec over the timed loop, defined like the harness's
``total images/sec`` (images / wall time of the whole loop).

  python benchmarks/bare_session_loop.py [--fetch_loss] --model=trivial
      --batch_size=32 [--num_batches=300 --num_warmup_batches=20]
      [harness flags ...]
"""

import json
import os
import sys
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

import tensorflow as tf  # pylint: disable=g-import-not-at-top

from tf_cnn_benchmarks.run import driver  # pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.config import flags  # pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.engine_graph import model_graph  # pylint: disable=g-import-not-at-top
from tf_cnn_benchmarks.config import run_config  # pylint: disable=g-import-not-at-top

tf1 = tf.compat.v1


def main(argv):
  fetch_loss = '--fetch_loss' in argv
  argv = [a for a in argv if a != '--fetch_loss']
  params, _ = flags.parse_command_line(['bare_session_loop'] + argv)
  rc = run_config.resolve(params)
  rc, source = driver.open_input_source(params, rc)
  built = model_graph.build(rc, source)
  # The same loss the harness reports (total_loss unless told otherwise).
  loss = (built.base_loss if params.loss_type_to_report == 'base_loss'
          else built.total_loss)
  fetches = [built.step_op, loss] if fetch_loss else built.step_op
  built.graph.finalize()
  with tf1.Session(graph=built.graph,
                   config=run_config.session_config(params, rc)) as sess:
    sess.run(built.init_ops)
    sess.run(built.input_init_ops)
    sess.run(built.post_init_ops)
    for _ in range(rc.num_warmup_batches):
      sess.run(fetches)
    start = time.perf_counter()
    for _ in range(rc.num_batches):
      sess.run(fetches)
    elapsed = time.perf_counter() - start
  print(json.dumps({
      'model': rc.model.name, 'batch_size': rc.batch_size_per_worker,
      'num_batches': rc.num_batches, 'fetch_loss': fetch_loss,
      'images_per_sec': rc.num_batches * rc.batch_size_per_worker / elapsed,
      'step_time_sec': elapsed / rc.num_batches}))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
