"""A cluster task's watchdog checks: start-up bound, stalls, lost peers,
stragglers, and the words that name the task, step and cause."""
