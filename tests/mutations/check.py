"""Applies each listed breakage to a copy of the tree and runs its guards.

  python -m tests.mutations.check [--only ID,...] [--jobs 2] [--timeout S]
                                  [--list] [--breakages MODULE]

A breakage (breakages.py) is one exact text in one file and what replaces
it: a feature broken on purpose, the way a regression would break it. The
check copies the tree once per job (no .git, no .venv, no caches), and in
a copy applies one breakage at a time, runs only that breakage's guarding
tests (pytest node ids) and puts the file back. A breakage is

  killed     a guard failed (or errored): the claim is guarded;
  SURVIVED   every guard passed on the broken code: the claim is not;
  unchecked  a guard was skipped, not found, or overran the timeout: the
             check cannot tell, which fails it too (a guard that never
             runs guards nothing).

Before anything runs, every breakage's text must be in its file exactly
once: a refactoring that moves or rewrites the code makes the list fail
here, by name, instead of rotting into breakages of nothing. The exit code
is 0 only when every breakage was killed; the summary names every other.

Each tree copy has one server (warm_pytest.py) that has loaded TensorFlow
and pytest once; each breakage's guards run in a child it forks, which
forgets the copy's modules first. A fresh pytest process per breakage spent
most of a typical breakage's time starting up.

The guards run with CI unset, so a test whose tool is missing skips (and
the breakage is "unchecked") instead of failing as if it caught the
breakage.
"""

import argparse
import concurrent.futures
import dataclasses
import importlib
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
# Not copied: git's and the venv's (large, not the code under test), the
# caches, and run records. The bytecode is copied (`make bytecode`): a guard
# then compiles only the file its breakage rewrote (newer than its .pyc).
_NOT_COPIED = shutil.ignore_patterns('.git', '.venv', '.pytest_cache',
                                     '*.egg-info', 'build', 'runs')
KILLED, SURVIVED, UNCHECKED = 'killed', 'SURVIVED', 'unchecked'
_WARM_PYTEST = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'warm_pytest.py')


@dataclasses.dataclass(frozen=True)
class Breakage:
  """``find`` in ``path`` (relative to the repo, exactly once) replaced by
  ``replace``; ``guards``: the pytest node ids that must turn red;
  ``breaks``: what stops being true, in words."""
  id: str
  path: str
  find: str
  replace: str
  guards: tuple
  breaks: str


@dataclasses.dataclass
class Outcome:
  breakage: Breakage
  verdict: str
  seconds: float
  detail: str = ''


def rotten(breakages, root=REPO):
  """Lines naming each breakage whose text is not in its file exactly
  once, or whose list entry is malformed (duplicate id, no guard,
  find == replace)."""
  problems, seen = [], set()
  for b in breakages:
    if b.id in seen:
      problems.append('%s: duplicate id' % b.id)
    seen.add(b.id)
    if not b.guards:
      problems.append('%s: no guarding test' % b.id)
    if b.find == b.replace:
      problems.append('%s: the replacement changes nothing' % b.id)
    try:
      with open(os.path.join(root, b.path)) as f:
        count = f.read().count(b.find)
    except OSError as e:
      problems.append('%s: %s: %s' % (b.id, b.path, e.strerror))
      continue
    if count != 1:
      problems.append('%s: its text is in %s %d times, not once (the code '
                      'moved or changed: update the breakage): %r' % (
                          b.id, b.path, count, b.find[:80]))
  return problems


def copy_tree(root, into):
  dest = os.path.join(into, 'tree')
  shutil.copytree(root, dest, ignore=_NOT_COPIED, symlinks=True)
  return dest


def _child_env(tree):
  env = dict(os.environ)
  # The copy's code, not an editable install's (nor the original tree's).
  env['PYTHONPATH'] = tree
  env['PYTHONDONTWRITEBYTECODE'] = '1'
  # A missing tool must skip (unchecked), not fail (a false kill).
  env.pop('CI', None)
  return env


def _verdict(junit_path, guards):
  """(verdict, detail) from pytest's JUnit XML of one guarded run."""
  try:
    cases = ElementTree.parse(junit_path).getroot().iter('testcase')
  except (OSError, ElementTree.ParseError) as e:
    return UNCHECKED, 'no test report (%s)' % e
  failed, skipped, passed = [], [], 0
  for case in cases:
    name = '%s::%s' % (case.get('classname'), case.get('name'))
    if case.find('failure') is not None or case.find('error') is not None:
      failed.append(name)
    elif case.find('skipped') is not None:
      reason = case.find('skipped').get('message', '')
      skipped.append('%s (%s)' % (name, reason))
    else:
      passed += 1
  if failed:
    return KILLED, 'red: ' + ', '.join(failed)
  if skipped:
    return UNCHECKED, 'skipped: ' + '; '.join(skipped)
  if passed < len(guards):
    return UNCHECKED, '%d test(s) ran for %d guard(s): a node id is wrong' % (
        passed, len(guards))
  return SURVIVED, 'every guard passed on the broken code'


class WarmPytest:
  """A warm_pytest server in one tree copy: starts each breakage's guards
  in a child forked with TensorFlow already loaded (warm_pytest.py says
  why), and restarts itself if it dies."""

  def __init__(self, tree):
    self.tree = tree
    self.proc = None
    self._pending = b''

  def _start(self):
    # Run by path from this checkout (a tree need not hold it), as `-m`
    # would run it: the copy (cwd) first on sys.path, this folder not on it.
    self.proc = subprocess.Popen(
        [sys.executable, '-c', 'import runpy; runpy.run_path(%r, '
         'run_name="__main__")' % _WARM_PYTEST], cwd=self.tree,
        env=_child_env(self.tree), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
        start_new_session=True)
    self._pending = b''

  def _line(self, deadline):
    """The server's next line, or None if none came before ``deadline``
    (None: no limit). EOFError if the server died."""
    while b'\n' not in self._pending:
      wait = None if deadline is None else max(0, deadline - time.monotonic())
      ready, _, _ = select.select([self.proc.stdout], [], [], wait)
      if not ready:
        return None
      chunk = os.read(self.proc.stdout.fileno(), 4096)
      if not chunk:
        raise EOFError('the warm pytest server ended')
      self._pending += chunk
    line, self._pending = self._pending.split(b'\n', 1)
    return line.decode()

  def run(self, args, log, timeout):
    """Runs pytest ``args`` in a fresh child; its exit code, or None when
    it ran over ``timeout`` seconds (then it and all it started are
    killed)."""
    if self.proc is None or self.proc.poll() is not None:
      self._start()
    self.proc.stdin.write((json.dumps({'args': args, 'log': log}) +
                           '\n').encode())
    pid = int(self._line(None).split()[1])
    line = self._line(time.monotonic() + timeout)
    if line is None:
      os.killpg(pid, signal.SIGKILL)
      self._line(None)
      return None
    return int(line.split()[1])

  def close(self):
    if self.proc is not None:
      self.proc.stdin.close()
      try:
        self.proc.wait(timeout=30)
      except subprocess.TimeoutExpired:
        self.proc.kill()
        self.proc.wait()


def run_guards(runner, breakage, timeout):
  """Applies ``breakage`` in ``runner``'s tree, runs its guards there,
  restores the file; returns its Outcome."""
  tree = runner.tree
  path = os.path.join(tree, breakage.path)
  with open(path) as f:
    original = f.read()
  start = time.monotonic()
  junit = os.path.join(tree, '.mutation-%s.xml' % breakage.id)
  log = os.path.join(tree, '.mutation-%s.log' % breakage.id)
  try:
    with open(path, 'w') as f:
      f.write(original.replace(breakage.find, breakage.replace, 1))
    args = ['-q', '-x', '-p', 'no:cacheprovider', '--junitxml', junit, '-o',
            'junit_family=xunit1'] + list(breakage.guards)
    try:
      code = runner.run(args, log, timeout)
    except (EOFError, OSError) as e:  # the server died (a broken pipe too)
      return Outcome(breakage, UNCHECKED, time.monotonic() - start,
                     'the warm pytest server: %s' % e)
    if code is None:
      return Outcome(breakage, UNCHECKED, time.monotonic() - start,
                     'its guards ran over %d s' % timeout)
    verdict, detail = _verdict(junit, breakage.guards)
    if verdict == UNCHECKED and code not in (0, 1):
      with open(log, errors='replace') as f:
        detail += '; pytest exit %d: %s' % (code, f.read()[-800:])
    return Outcome(breakage, verdict, time.monotonic() - start, detail)
  finally:
    with open(path, 'w') as f:
      f.write(original)
    for made in (junit, log):
      if os.path.exists(made):
        os.remove(made)


def check(breakages, jobs=2, timeout=600, root=REPO, say=print):
  """Runs every breakage; returns its Outcomes (in the list's order)."""
  with tempfile.TemporaryDirectory(prefix='mutations-') as work:
    runners = queue.Queue()
    started = []
    for i in range(max(1, jobs)):
      os.mkdir(os.path.join(work, str(i)))
      runner = WarmPytest(copy_tree(root, os.path.join(work, str(i))))
      started.append(runner)
      runners.put(runner)

    def one(breakage):
      runner = runners.get()
      try:
        outcome = run_guards(runner, breakage, timeout)
      finally:
        runners.put(runner)
      say('%-9s %-34s %5.0f s  %s' % (outcome.verdict, breakage.id,
                                      outcome.seconds, outcome.detail[:160]))
      return outcome

    try:
      with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        return list(pool.map(one, breakages))
    finally:
      for runner in started:
        runner.close()


def load(module_name):
  return list(importlib.import_module(module_name).BREAKAGES)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--only', default='',
                      help='comma-separated breakage ids (default: all)')
  parser.add_argument('--jobs', type=int, default=2)
  parser.add_argument('--timeout', type=int, default=600,
                      help='seconds for one breakage\'s guards')
  parser.add_argument('--list', action='store_true',
                      help='list the breakages and their guards, run none')
  parser.add_argument('--breakages', default='tests.mutations.breakages',
                      help='the module whose BREAKAGES to check')
  parser.add_argument('--root', default=REPO, help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  breakages = load(args.breakages)
  if args.only:
    wanted = args.only.split(',')
    unknown = sorted(set(wanted) - {b.id for b in breakages})
    if unknown:
      parser.error('unknown breakage id(s): %s' % ', '.join(unknown))
    breakages = [b for b in breakages if b.id in wanted]
  problems = rotten(breakages, args.root)
  if problems:
    print('The breakage list no longer matches the code:')
    for line in problems:
      print('  ' + line)
    return 1
  if args.list:
    for b in breakages:
      print('%s  %s: %s\n    guards: %s' % (b.id, b.path, b.breaks,
                                            ' '.join(b.guards)))
    return 0
  print('Mutation check: %d breakage(s), %d job(s), each guard run alone '
        '(timeout %d s)' % (len(breakages), args.jobs, args.timeout),
        flush=True)
  start = time.monotonic()
  outcomes = check(breakages, args.jobs, args.timeout, args.root,
                   say=lambda line: print(line, flush=True))
  bad = [o for o in outcomes if o.verdict != KILLED]
  print('%d of %d breakage(s) killed in %.0f s.' % (
      len(outcomes) - len(bad), len(outcomes), time.monotonic() - start))
  for o in bad:
    print('%s: %s (%s, %s): %s' % (o.verdict, o.breakage.id,
                                   o.breakage.path, o.breakage.breaks,
                                   o.detail))
  return 1 if bad else 0


if __name__ == '__main__':
  sys.exit(main())
