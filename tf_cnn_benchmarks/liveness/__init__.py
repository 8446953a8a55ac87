"""Liveness of a run, local or cluster: no run hangs silently.

A thread beside the main thread (watchdog.py) that acts on SIGINT/SIGTERM
even while the main thread is blocked inside TensorFlow (stop_request.py),
announces slow phases and times every one (phases.py, activity.py), reports
a stall (local_stall.py for one process; the cluster adds its own checks),
and has one way out of a stuck process (run_exit.py). No TensorFlow here,
and nothing from cluster/: the cluster runtime builds on this package.
"""
