"""The graph engine (--engine=graph, the default): the run as a tf.compat.v1
graph run in a session, as the original tool did. engine_tf2/ is its twin."""
