"""The launcher (`tf_cnn_benchmarks launch`, `k8s`): runs on the user's machine
without TensorFlow; starts the tasks (locally or over ssh), relays their
output, and says how the cluster ended."""
