"""tf_cnn_benchmarks: the classic CNN training benchmark, rebuilt."""
