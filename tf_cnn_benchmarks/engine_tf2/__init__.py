"""The tf2 engine (--engine=tf2): the zoo trained by TensorFlow 2's own path.

The same models (models/, the same builder and name-seeded initial weights)
train in a ``tf.function`` step under a ``tf.distribute`` strategy instead of
a tf.compat.v1 session. The driver (run/driver.py) runs it through the engine
object it is handed, exactly where it would build the graph and open the
session; inputs, the step loop, timing, the report and the run record are
the core's, so both engines print and record the same things.

  strategies.py      which strategy the flags mean; virtual CPU devices
  variable_store.py  tf.compat.v1.get_variable's home (created once, by name)
  inputs.py          the inputs through distribute_datasets_from_function
  optimizer.py       sgd/momentum with the graph engine's own kernels
  train_step.py      the tf.function step, its runner, its FLOPs
  engine.py          the engine object the driver calls

Like the cluster runtime, nothing in the core imports this package: the
entry point (benchmark_main.py) hands the engine to driver.run.
"""
