"""The command line and the choices it fixes: every flag (one table), parsing
into Params, checks of values and combinations, TF_CONFIG, the run mode, and
run_config (the concrete settings of one run). Only run_config loads
TensorFlow; the rest runs before it loads."""
