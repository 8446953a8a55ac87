"""This task's TensorFlow server: the protocol check, its config, its start.

``check_protocol`` asks TensorFlow up front whether this build has a server
for --server_protocol, so a missing one is one line, not a failure deep in
start-up.

TensorFlow's gRPC server listens on every interface of its host (``*:port``
in ``ss -ltnp``, tests/cluster/test_server_exposure.py), whatever host the
cluster spec names, and has no authentication: whoever reaches the port
can run graph ops in the process. We cannot change that: TensorFlow 2.21
binds ``0.0.0.0:PORT``, hard-coded in its grpc_server_lib.cc, and neither
ServerDef (only a ``port``), ConfigProto nor RPCOptions has an address to
bind. So each task asks the kernel where its server really listens
(``listening_addresses``), keeps that in its role (the run record's
``server_listens_on``), and says once, as its server starts, when that is
more than loopback (``exposure_warning``), with the firewall rule that
closes the port to other hosts.
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
  role = dataclasses.replace(role, target=server.target)
  return measured_exposure(role, print)


def measured_exposure(role, say):
  """``role`` with where its server listens (``listens_on``), after
  saying the exposure warning (if any) with ``say``."""
  role = dataclasses.replace(role, listens_on=tuple(listening_addresses(
      roles.split_address(role.address)[1])))
  warning = exposure_warning(role)
  if warning:
    say(warning)
    sys.stdout.flush()
  return role


def listening_addresses(port):
  """'ip:port' of each socket of this process listening on ``port``, as
  the kernel has it (not as the cluster spec says): '[::]:2222' is every
  IPv6 and IPv4 address."""
  import psutil  # pylint: disable=g-import-not-at-top
  return sorted({
      ('[%s]:%d' if ':' in c.laddr.ip else '%s:%d') % (c.laddr.ip, port)
      for c in psutil.Process().net_connections('tcp')
      if c.status == psutil.CONN_LISTEN and c.laddr.port == port})


def _is_loopback(host):
  if host == 'localhost':
    return True
  try:
    return ipaddress.ip_address(host).is_loopback
  except ValueError:
    return False  # A host name: it may be anywhere.


def _listens_on_loopback_only(role):
  """Also when it listens nowhere at its port (a coordinator may start no
  server)."""
  return all(_is_loopback(roles.split_address(a)[0])
             for a in role.listens_on)


def firewall_rule(port):
  """The rule that closes ``port`` to every host but this one."""
  # The server listens on IPv6 and IPv4 alike: both tables.
  return '; '.join('%s -I INPUT -p tcp --dport %d ! -i lo -j DROP' % (
      tables, port) for tables in ('iptables', 'ip6tables'))


def exposure_warning(role):
  """The one-line warning of a task whose server is reachable from other
  hosts (None when ``role.listens_on``, measured, is loopback only)."""
  if _listens_on_loopback_only(role):
    return None
  host, port = roles.split_address(role.address)
  hosts = sorted({roles.split_address(address)[0]
                  for addresses in role.jobs.values()
                  for address in addresses})
  exposed = [h for h in hosts if not _is_loopback(h)]
  where = ', '.join(role.listens_on)
  if any(roles.split_address(a)[0] in ('0.0.0.0', '::')
         for a in role.listens_on):
    where = 'every interface of this host (%s)' % where
  if exposed:
    return (
        'Warning: %s\'s TensorFlow server listens on %s, not only %s, and '
        'has no authentication: anyone who can reach the port can run '
        'TensorFlow ops in this process. This cluster spans non-loopback '
        'hosts (%s); run it on a trusted network only (docs/cluster.md, '
        '"Trusted network only").' % (role.task_name, where, host,
                                      ', '.join(exposed)))
  return (
      'Warning: %s\'s TensorFlow server listens on %s, though its cluster '
      'is all on loopback: TensorFlow cannot bind one address, and the '
      'server has no authentication (anyone who can reach the port can run '
      'TensorFlow ops in this process). To close it to other hosts: %s '
      '(docs/cluster.md, "Trusted network only").' % (
          role.task_name, where, firewall_rule(port)))


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
