"""One run, whichever engine trains: the driver, the step loop, timing, the
report and the record, the run result, the --train_dir lock, a single process's
runtime, and the evaluation schedule."""
