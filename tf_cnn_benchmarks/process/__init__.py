"""What the process sets before TensorFlow loads: its logging, OpenMP
variables, glibc malloc settings; and TensorFlow's import itself, without
its eager load of Keras."""
