"""The TF_CONFIG environment variable: a cluster handed to a task from outside.

Kubeflow's TFJob, Vertex AI and our own `tf_cnn_benchmarks k8s` manifests
start each task with TF_CONFIG = {"cluster": {...}, "task": {"type": ...,
"index": ...}} instead of command-line flags. It is read here only: the core
asks read() whether this process is a cluster task (flag_checks), and
cluster/roles.py parses the object with the same code as a TF_CONFIG-form
--cluster_spec file. No TensorFlow here.
"""

import json
import os

from tf_cnn_benchmarks.config.usage_errors import UsageError

ENV = 'TF_CONFIG'


def read(environ=None):
  """TF_CONFIG as a dict, or None when it describes no cluster.

  As TensorFlow's own cluster resolver does, an unset or blank variable, or
  one with no (or an empty) "cluster", means no cluster: the process runs
  alone. Text that is not a JSON object is a UsageError quoting it.
  """
  text = (os.environ if environ is None else environ).get(ENV, '')
  if not text.strip():
    return None
  try:
    value = json.loads(text)
  except ValueError as e:
    raise UsageError(
        '%s is not valid JSON (%s): %s. It must be an object like {"cluster": '
        '{"ps": ["host:port"], "worker": ["host:port", ...]}, "task": '
        '{"type": "worker", "index": 0}}; fix it or unset %s.' % (
            ENV, e, _quote(text), ENV)) from None
  if not isinstance(value, dict):
    raise UsageError(
        '%s must be a JSON object with "cluster" and "task", not %s; fix it '
        'or unset %s.' % (ENV, _quote(text), ENV))
  return value if value.get('cluster') else None


def _quote(text, limit=200):
  text = ' '.join(text.split())
  return repr(text if len(text) <= limit else text[:limit] + '...')
