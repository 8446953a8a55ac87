"""Process exit codes, one per way a run can end (documented in README)."""

OK = 0
# The run started but failed: a TensorFlow error, bad data, a crashed peer.
RUN_FAILED = 1
# Bad command line: unknown flag, bad value, impossible combination.
USAGE = 2
# No progress anywhere in the cluster for --stall_timeout (+ shutdown grace).
STALLED = 3
# A peer task could not be reached within --startup_timeout.
UNREACHABLE = 4
# Stopped by SIGINT/SIGTERM (128 + SIGINT, as shells report Ctrl-C).
INTERRUPTED = 130
