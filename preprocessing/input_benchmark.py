"""Input-only throughput: images/sec of an InputSource with no model.

Each step runs every tower's batch to completion inside the session
(grouped, not fetched, so the numbers exclude copying batches into Python),
after warm-up steps that fill the shuffle buffer and let tf.data's autotuner
settle. Data errors come back as DataError, like in the driver.
"""

import time

import tensorflow as tf

from preprocessing.errors import explain_data_error

tf1 = tf.compat.v1


def measure_input_throughput(source, tower_devices=('/cpu:0',),
                             warmup_steps=10, steps=50, config=None):
  """Returns {'images_per_sec', 'step_times', 'images_per_step',
  'cpu_ms_per_image'}."""
  graph = tf.Graph()
  with graph.as_default():
    pairs = source.tower_batches(list(tower_devices))
    step = tf.group(*[t for pair in pairs for t in pair])
    images_per_step = sum(int(images.shape[0]) for images, _ in pairs)
    with tf1.Session(config=config) as sess:
      sess.run(tf1.local_variables_initializer())
      sess.run(source.initializers())
      try:
        for _ in range(warmup_steps):
          sess.run(step)
        times = []
        cpu_start = time.process_time()
        start = time.perf_counter()
        for _ in range(steps):
          before = time.perf_counter()
          sess.run(step)
          times.append(time.perf_counter() - before)
        elapsed = time.perf_counter() - start
        cpu_seconds = time.process_time() - cpu_start
      except tf.errors.OpError as e:
        data_error = explain_data_error(e)
        if data_error is None:
          raise
        raise data_error from e
  return {'images_per_sec': images_per_step * steps / elapsed,
          'step_times': times, 'images_per_step': images_per_step,
          # Process CPU time per image: steadier than images/sec on a busy
          # machine (it includes the pipeline's background threads).
          'cpu_ms_per_image': 1000.0 * cpu_seconds / (images_per_step * steps)}
