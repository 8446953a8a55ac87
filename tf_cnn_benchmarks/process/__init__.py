"""What the process sets before TensorFlow loads: its logging, OpenMP
variables, glibc malloc settings."""
