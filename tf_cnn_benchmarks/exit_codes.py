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
# The run trained and measured, but no evaluation reached
# --stop_at_top_1_accuracy (record status target_not_reached). Not 0: a
# script asking "does it converge?" must not read it as yes; not 1: nothing
# failed, and the record's numbers (speed, the accuracy curve) are valid.
TARGET_NOT_REACHED = 5
# Stopped by SIGINT/SIGTERM (128 + SIGINT, as shells report Ctrl-C).
INTERRUPTED = 130
