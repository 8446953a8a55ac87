"""The signals that ask any program of this project to stop: Ctrl-C
(SIGINT), a scheduler's or kill's SIGTERM, and SIGHUP (the terminal was
closed). The benchmark's stop request, the launcher and its ssh guard, and
the runner behind suite/matrix/bisect all end cleanly on each of them."""

import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
