"""A cluster of ps/worker tasks over gRPC: three programs above what they
share (roles.py: who is who; deadlines.py: how long a call may wait;
server.py: a task's TensorFlow server).

  launch/  the launcher on the user's machine (no TensorFlow): starts the
           tasks locally, over ssh or as Kubernetes manifests, and says how
           the cluster ended;
  task/    one task: its role's work (train or serve) around the driver;
  watch/   the task's watchdog checks: start-up, stalls, lost peers,
           stragglers, and the words that name the task, step and cause.
"""
