"""--all_reduce_spec: the original's grammar, and which algorithms run here.

No TensorFlow: config/flag_checks.py checks a spec before TensorFlow loads. The
graph side is all_reduce.py.

Grammar (the original's):  alg ::= name | name#shards;
range ::= alg | alg/alg;  spec ::= range | range:size:spec
where size is a whole number with an optional K/k/M/G/T (powers of 1024)
suffix. ``pscpu:32k:xring`` reduces gradients of at most 32768 elements with
pscpu and larger ones with xring; the last range has no limit (-1).
"""

import dataclasses
import re

# Every algorithm name the original accepted.
ALGORITHMS = ('nccl', 'nccl/xring', 'nccl/rechd', 'nccl/pscpu', 'xring',
              'pscpu', 'psgpu', 'pscpu/pscpu', 'collective')
# What replicated mode builds from ops across its towers. pscpu/pscpu is a
# two-level shuffle (within each worker, then across workers' CPUs); in one
# process the second level has one CPU, so it is pscpu. Likewise the nccl/
# hybrids: NCCL within each worker, then xring, recursive halving-doubling
# or pscpu across the workers; in one process that is NCCL alone. The nccl
# ones need GPU towers (run_config refuses them on CPU towers).
RUNS_IN_REPLICATED = ('xring', 'pscpu', 'pscpu/pscpu', 'psgpu', 'nccl',
                      'nccl/xring', 'nccl/rechd', 'nccl/pscpu')
# The harness's own name for its default: each gradient summed on a tower
# chosen round-robin (the original's default copy-to-device reduction).
SPREAD = 'spread'

_SUFFIX = {'': 1, 'K': 1 << 10, 'k': 1 << 10, 'M': 1 << 20, 'G': 1 << 30,
           'T': 1 << 40}


class SpecError(ValueError):
  """A spec that does not parse, or that this harness cannot run."""


@dataclasses.dataclass(frozen=True)
class Range:
  alg: str
  shards: int
  limit: int  # largest gradient (in elements) this range takes; -1: any

  def takes(self, num_elements):
    return self.limit < 0 or num_elements <= self.limit


def _size(text, spec):
  match = re.fullmatch(r'(\d+)([KkMGT]?)', text)
  if text == '-1':
    return -1
  if not match:
    raise SpecError('--all_reduce_spec=%s: size limit %r is not a whole '
                    'number such as 2048, 32k or 1M.' % (spec, text))
  return int(match.group(1)) * _SUFFIX[match.group(2)]


def _algorithm(text, spec):
  name, _, shards = text.partition('#')
  if name not in ALGORITHMS + (SPREAD,):
    raise SpecError('--all_reduce_spec=%s: unknown algorithm %r; the '
                    'original\'s are %s.' % (spec, name, ', '.join(ALGORITHMS)))
  if shards and not shards.isdigit():
    raise SpecError('--all_reduce_spec=%s: shards %r after "#" is not a whole '
                    'number.' % (spec, shards))
  return name, int(shards or 1)


def parse(spec):
  """'pscpu:32k:xring' -> (Range(pscpu, 1, 32768), Range(xring, 1, -1))."""
  parts = spec.split(':') + ['-1']
  if len(parts) % 2:
    raise SpecError('--all_reduce_spec=%s: expected algorithm[:size:'
                    'algorithm...], e.g. pscpu:32k:xring.' % spec)
  ranges = []
  for alg_text, size_text in zip(parts[0::2], parts[1::2]):
    name, shards = _algorithm(alg_text, spec)
    ranges.append(Range(name, shards, _size(size_text, spec)))
  return tuple(ranges)


def refusal(ranges, variable_update):
  """Why this harness cannot run the parsed spec in a mode; None if it can.

  Decided without knowing the devices: the need of GPU towers of nccl is
  checked when the run's devices are (run_config.resolve), psgpu's when
  the graph is built (all_reduce.py).
  """
  names = [r.alg for r in ranges]
  if variable_update == 'collective_all_reduce':
    # Its one algorithm, TensorFlow's collective ops, one per gradient.
    if names != ['collective'] or ranges[0].shards != 1:
      return ('collective_all_reduce always runs one TensorFlow collective '
              'per gradient; the only spec it takes is "collective"')
    return None
  if variable_update != 'replicated':
    return ('only replicated (and "collective" with collective_all_reduce) '
            'take a spec here; %s reduces its own fixed way' %
            variable_update)
  if 'collective' in names:
    return ('collective ops across one process\'s towers are not built; '
            'use --variable_update=collective_all_reduce for collectives')
  return None


def ring_order(gpu_indices, num_towers):
  """--gpu_indices ("2,0,1,3") as the towers' order around a ring
  ([] when not given: their own order); SpecError unless it names every
  tower once."""
  if not gpu_indices:
    return []
  try:
    order = [int(i) for i in gpu_indices.split(',')]
  except ValueError:
    order = None
  if order is None or sorted(order) != list(range(num_towers)):
    raise SpecError(
        '--gpu_indices=%s should list the %d GPUs of --num_gpus=%d in ring '
        'order, each once, separated by commas (e.g. --gpu_indices=%s).' % (
            gpu_indices, num_towers, num_towers,
            ','.join(str(i) for i in reversed(range(num_towers)))))
  return order


def uses_nccl(spec):
  """Does --all_reduce_spec (text, or None) name an NCCL algorithm?"""
  return bool(spec) and any('nccl' in r.alg for r in parse(spec))
