"""This task's TensorFlow server: the protocol check, its config, its start.

``check_protocol`` asks TensorFlow up front whether this build has a server
for --server_protocol, so a missing one is one line, not a failure deep in
start-up.

TensorFlow's gRPC server listens on every interface of its host (``*:port``
in ``ss -ltnp``, tests/cluster/test_server_exposure.py), whatever host the
cluster spec names, and has no authentication: whoever reaches the port
can run graph ops in the process. We cannot change that, so a task whose
cluster spans non-loopback hosts says so once, as its server starts
(``exposure_warning``).
"""

import dataclasses
import ipaddress
import sys

from tf_cnn_benchmarks.cluster import roles
from tf_cnn_benchmarks.config.usage_errors import UsageError

# Server factory names in TensorFlow's "available server factories" list,
# by protocol.
_FACTORY_PROTOCOLS = {'GRPC_SERVER': 'grpc', 'VERBS_SERVER': 'grpc+verbs',
                      'MPI_SERVER': 'grpc+mpi', 'GDR_SERVER': 'grpc+gdr'}

# What each non-default protocol is, and which TensorFlow build has it.
_PROTOCOL_BUILDS = {
    'grpc+verbs': ('RDMA over InfiniBand/RoCE', 'verbs support (TF 1.x '
                   'configured with --config=verbs, or the '
                   'tensorflow/networking add-on for TF 2.x)'),
    'grpc+mpi': ('MPI transport', 'MPI support (TF 1.x --config=mpi, or '
                 'the tensorflow/networking add-on)'),
    'grpc+gdr': ('GPUDirect RDMA', 'gdr support (TF 1.x --config=gdr, or '
                 'the tensorflow/networking add-on)'),
}


class ProtocolUnavailable(UsageError):
  """This TensorFlow build has no server for the requested protocol."""


def available_protocols(error_text):
  """Protocols named in TensorFlow's "available server factories" list."""
  marker = 'available server factories are:'
  tail = error_text.split(marker, 1)[-1] if marker in error_text else ''
  names = tail.replace('[', ' ').replace(']', ' ').split()
  return [_FACTORY_PROTOCOLS.get(n, n.lower()) for n in names]


def check_protocol(protocol):
  """Raises ProtocolUnavailable unless this build can serve ``protocol``.

  Stock TensorFlow only has grpc, and other protocols otherwise fail deep
  inside start-up with "No server factory registered"; asking up front
  lets us say so in one line. The probe server is never started.
  """
  if protocol == 'grpc':
    return
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    tf.distribute.Server({'probe': ['127.0.0.1:0']}, job_name='probe',
                         task_index=0, protocol=protocol, start=False)
  except tf.errors.NotFoundError as e:
    if 'No server factory registered' not in str(e):
      raise
    have = available_protocols(str(e)) or ['grpc']
    what, build = _PROTOCOL_BUILDS.get(
        protocol, ('a custom transport', 'its server factory compiled in'))
    raise ProtocolUnavailable(
        'This TensorFlow build (%s) has no server for --server_protocol=%s; '
        'it has: %s. %s (%s) needs a TensorFlow built from source with %s.'
        % (tf.__version__, protocol, ', '.join(have), protocol, what,
           build)) from None


# Servers must outlive the function that started them (a collected
# tf.distribute.Server stops serving).
_SERVERS = []


def server_config(role, num_cpu_devices=1, base_config=None):
  """ConfigProto of this task's server and sessions."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  config = tf.compat.v1.ConfigProto()
  if base_config is not None:
    config.CopyFrom(base_config)
  config.device_count['CPU'] = max(1, num_cpu_devices)
  del config.device_filters[:]
  config.device_filters.extend(role.device_filters())
  if role.mode.uses_collectives:
    config.experimental.collective_group_leader = (
        '/job:worker/replica:0/task:0')
  return config


def start_server(role, config):
  """Starts this task's server; returns the role with its session target."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  server = tf.distribute.Server(
      tf.train.ClusterSpec(role.tf_cluster_def()), job_name=role.job_name,
      task_index=role.task_index, protocol=role.protocol, config=config,
      start=True)
  _SERVERS.append(server)
  warning = exposure_warning(role)
  if warning:
    print(warning)
    sys.stdout.flush()
  return dataclasses.replace(role, target=server.target)


def _is_loopback(host):
  if host == 'localhost':
    return True
  try:
    return ipaddress.ip_address(host).is_loopback
  except ValueError:
    return False  # A host name: it may be anywhere.


def exposure_warning(role):
  """The one-line warning of a task whose cluster spans non-loopback hosts
  (None when every task is on this machine's loopback)."""
  hosts = sorted({roles.split_address(address)[0]
                  for addresses in role.jobs.values()
                  for address in addresses})
  exposed = [host for host in hosts if not _is_loopback(host)]
  if not exposed:
    return None
  return (
      'Warning: %s\'s TensorFlow server listens on port %d of every '
      'interface of this host (not only %s) and has no authentication: '
      'anyone who can reach the port can run TensorFlow ops in this '
      'process. This cluster spans non-loopback hosts (%s); run it on a '
      'trusted network only (docs/cluster.md, "Trusted network only").' % (
          role.task_name, roles.split_address(role.address)[1],
          roles.split_address(role.address)[0], ', '.join(exposed)))


def device_summary(role):
  """One line for this task's devices, in place of TensorFlow's lines.

  'Devices: worker0: 2 x CPU (/job:worker/replica:0/task:0/device:CPU:0-1)'.
  TensorFlow logs a line per device per session (hidden below
  --verbosity=2); the devices are listed through a session that sees only
  this task, so no peer needs to be up.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  config = tf.compat.v1.ConfigProto(device_filters=[role.device])
  with tf.compat.v1.Session(role.target, config=config) as sess:
    names = [d.name for d in sess.list_devices()]
  by_type = {}
  for name in names:
    prefix, _, number = name.rpartition(':')
    kind = prefix.rpartition('/device:')[2]
    by_type.setdefault((kind, prefix), []).append(int(number))
  parts = []
  for (kind, prefix), numbers in sorted(by_type.items()):
    numbers.sort()
    span = ('%d' % numbers[0] if len(numbers) == 1
            else '%d-%d' % (numbers[0], numbers[-1]))
    parts.append('%d x %s (%s:%s)' % (len(numbers), kind, prefix, span))
  return 'Devices: %s: %s' % (role.task_name, ', '.join(parts))
