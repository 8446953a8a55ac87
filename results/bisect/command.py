"""`tf_cnn_benchmarks bisect`: which TensorFlow release made it slower?

  tf_cnn_benchmarks bisect --good 2.16.1 --bad 2.21.0 --suite SUITE.toml \
      --result_dir DIR [--venv_dir D] [--repeat N] [--max_repeat M] \
      [--alpha 0.05] [--min_effect 2] [--timeout S] [--dry_run]
  tf_cnn_benchmarks bisect --good 2.16.1 --bad 2.21.0 --result_dir DIR \
      -- --model=trivial --device=cpu            (one ad-hoc configuration)

The releases from --good to --bad come from the package index
(releases.py). Each step runs every configuration still searched under the
middle release and both ends of its range, N runs each, taking turns run by
run as `matrix` does (cached venvs, results/venvs.py; labels tf-<version>),
and acts on compare's verdicts (search.py says how). The runs of a round
are pairs, so compare judges them by the paired test; the ends comparisons
of the configurations in a step are one family (Holm), as in `compare`. A
step whose verdicts do not settle it raises N and adds the runs, up to
--max_repeat; past that the search stops and says which --repeat to try.
The larger N stays for the steps after it: the machine is as noisy then.

N: --repeat, else the smallest run count that caught a 5% slowdown in >=
95% of trials on the suite's models (results/detection_power.json, when it
holds a full measurement), else DEFAULT_REPEAT; never below the pairs with
which the paired test can reach p < alpha / (configurations), never above
--max_repeat. Once a step has runs, their spread plans: an unsettled step
goes on with the runs compare says would catch a 5% slowdown (`runs for
5%`, from the spread observed) when that is more than N, else twice N.
A suite file's own `repeat` and `label` are not used: bisect chooses the
runs and labels each run by its release. Every run's record stays in
--result_dir for `compare` and `dashboard`.

Exit code: 0 every configuration that got slower was narrowed to two
adjacent releases; 1 none got slower, or a search stopped (inconclusive at
--max_repeat, a venv or an end's runs failed, the releases between could
not run) or the index could not be read; 2 bad input; 130 interrupted.
"""

import argparse
import collections
import os
import sys

from results import compare
from results import comparison as comparison_lib
from results import detection_power
from results import injected_runs
from results import matrix
from results import runner
from results import stats
from results import store
from results import suite
from results import tables
from results import venvs
from results.bisect import releases
from results.bisect import search
from results.errors import UsageError, report_usage_error

EXIT_FOUND = 0
EXIT_NOT_FOUND = 1
# Runs per release per step when no full power measurement says better: the
# paired test's smallest p at 6 pairs is 2/64 = 0.031, under alpha, so a
# clear slowdown of one configuration is caught at once; a subtle one (or
# several configurations: Holm) escalates.
DEFAULT_REPEAT = 6
DEFAULT_MAX_REPEAT = 20


def build_parser(prog):
  parser = argparse.ArgumentParser(
      prog=prog, description='Find the first TensorFlow release between a '
      'good and a bad one where a configuration got slower, by bisecting '
      'the releases on the package index.')
  parser.add_argument('--good', required=True,
                      help='an older release that is fast, e.g. 2.16.1')
  parser.add_argument('--bad', required=True,
                      help='a newer release that is slow, e.g. 2.21.0')
  parser.add_argument('--suite', help='TOML suite file (or flags after --)')
  parser.add_argument('--venv_dir', default=venvs.DEFAULT_VENV_ROOT,
                      help='where the venvs are cached (default %(default)s)')
  parser.add_argument('--max_repeat', type=int, default=DEFAULT_MAX_REPEAT,
                      help='most runs per release in a step when it is '
                      'inconclusive (default %(default)s)')
  compare.add_test_options(parser)
  parser.add_argument('--allow_injected_slowdown', action='store_true',
                      help='judge runs slowed on purpose by the test-only '
                      'injected slowdown too (refused otherwise)')
  suite.add_run_options(parser, label=False)
  return parser


def check_args(args):
  compare.check_test_options(args)
  # A step's runs are pairs (one of each release per round).
  fewest = stats.fewest_runs(args.alpha, paired=True)
  for option, value in (('--repeat', args.repeat),
                        ('--max_repeat', args.max_repeat)):
    if value is not None and value < fewest:
      raise UsageError(
          '%s %d is too few: with fewer than %d pairs of runs the paired '
          'test can never reach p < %g, so every step would be inconclusive. '
          'Use %d or more.' % (option, value, fewest, args.alpha, fewest))
  if args.repeat is not None and args.max_repeat < args.repeat:
    raise UsageError('--max_repeat %d is below --repeat %d; the cap on runs '
                     'per release must be at least the runs a step starts '
                     'with.' % (args.max_repeat, args.repeat))
  venvs.test_environment(args.good)   # a malformed value: UsageError
  if args.allow_injected_slowdown:
    return
  # Before any run: every run would be altered on purpose, and compare's
  # refusal would come only after a whole step of them.
  for name, altered in (
      (venvs.TEST_ENV_VAR, 'some releases\' runs are altered on purpose'),
      (injected_runs.ENV_VAR, 'every run would be slowed on purpose')):
    if os.environ.get(name, '').strip():
      raise UsageError(
          'the test-only variable %s is set, so %s and the verdicts would '
          'measure nothing. Unset it, or pass --allow_injected_slowdown '
          'when testing bisect itself.' % (name, altered))


def model_of(config):
  """The --model a configuration runs (the benchmark's default: trivial)."""
  for arg in reversed(config.flag_args):
    if arg.startswith('--model='):
      return arg.split('=', 1)[1]
  return 'trivial'


def initial_repeat(requested, power, models, alpha, configs=1):
  """(runs per release per step, why that many), before any run: the
  measured figures, at least the pairs with which the paired test can reach
  p < alpha / configs (what a lone change must reach under Holm)."""
  if requested:
    return requested, 'given by --repeat'
  fewest = stats.fewest_runs(alpha / configs, paired=True)
  floor = ('' if fewest <= DEFAULT_REPEAT else
           '; %d: the fewest pairs that can reach p < %.3g with %d '
           'configurations' % (fewest, alpha / configs, configs))
  if not power.full:
    return max(DEFAULT_REPEAT, fewest), (
        'the default: results/detection_power.json holds no full '
        'measurement to plan by' + floor)
  needed = {model: power.repeat_for(model) for model in models}
  unknown = sorted(m for m, n in needed.items() if n is None)
  if unknown:
    return max(DEFAULT_REPEAT, fewest), (
        'the default: no measured run count catches a 5%% slowdown of %s%s'
        % (', '.join(unknown), floor))
  return max(max(needed.values()), fewest), (
      'the smallest that caught a 5%% slowdown in >= 95%% of trials '
      '(results/detection_power.json: %s)%s'
      % (detection_power.describe_source(power.data), floor))


def version_label(version):
  return matrix.version_label(version, None)


class Bisection:
  """One bisect command's state: the ranges, the venvs, the runs per step."""

  def __init__(self, args, configs, chain, repeat, stream):
    self.args = args
    self.configs = {config.name: config for config in configs}
    self.ranges = [search.Range(config.name, list(chain))
                   for config in configs]
    self.repeat = repeat
    self.stream = stream
    self.pythons = {}
    self.step_number = 0

  def say(self, text=''):
    print(text, file=self.stream, flush=True)

  def python(self, version):
    """The version's interpreter, or None when its venv cannot be built."""
    if version not in self.pythons:
      try:
        self.pythons[version] = matrix.version_python(version, self.args,
                                                      self.stream)
      except venvs.VenvError as error:
        self.say('tf %s: %s' % (version, error))
        self.pythons[version] = None
    return self.pythons[version]

  def plan(self, group, versions, made):
    """The runs that bring each configuration of group to self.repeat runs
    per version (made: runs already made this step), versions in turn."""
    plans = []
    for version in versions:
      python = self.python(version)
      if python is None:
        continue
      for one in group:
        more = self.repeat - made[one.config]
        if more > 0:
          plans.append(runner.plan_runs(
              [self.configs[one.config]], more, version_label(version),
              python, venvs.test_environment(version),
              first_repeat=made[one.config] + 1))
    # The order goes on alternating where the step's last runs left it: a
    # top-up after 7 rounds starts B A, not A B again.
    return runner.interleave(plans, first_round=min(
        (made[one.config] for one in group), default=0))

  def compare(self, paths, baseline, candidate):
    """compare's row for baseline -> candidate on these records, not yet
    judged (comparison.judge_family), or None when a side has no successful
    run."""
    if not paths[baseline] or not paths[candidate]:
      return None
    frame = store.load_runs(paths[baseline] + paths[candidate])
    labels = [version_label(baseline), version_label(candidate)]
    usable = comparison_lib.available_values(
        comparison_lib.usable_runs(frame), 'label')
    if not set(labels) <= set(usable):   # e.g. a record without images/sec
      return None
    rows = comparison_lib.compare_groups(
        frame, 'label', labels[0], labels[1], self.args.alpha,
        self.args.min_effect, allow_injected=self.args.allow_injected_slowdown,
        judged=False, metric=self.args.metric,
        drop_extremes=self.args.drop_extremes).rows
    both = [row for row in rows if row.verdict != comparison_lib.MISSING]
    return (both or rows or [None])[0]

  def comparison_line(self, name, baseline, candidate, row):
    if row is None:
      return '  %-4s %s -> %s: not compared (a side has no successful run)' % (
          name, baseline, candidate)
    line = '  %-4s %s -> %s: %s: %s (%d vs %d runs; detectable %s, 5%%: %s)' % (
        name, baseline, candidate, tables.change_summary(row), row.verdict,
        row.baseline_runs, row.candidate_runs, tables.detectable(row),
        tables.runs_needed(row))
    return line + ('\n         note: %s' % row.note if row.note else '')

  def comparisons(self, one, paths):
    """(ends, low, high) of one configuration's step; low and high None
    when good and bad are adjacent."""
    middle = one.middle()
    ends = self.compare(paths, one.good, one.bad)
    if middle is None:
      return ends, None, None
    return (ends, self.compare(paths, one.good, middle),
            self.compare(paths, middle, one.bad))

  def judge_all(self, rows):
    """Judges the step's comparisons (rows: config -> (ends, low, high)):
    the configurations' ends are one family (Holm), as compare judges the
    configurations of one comparison; low and high only choose the half
    once the ends showed a slowdown, each on its own."""
    alpha, min_effect = self.args.alpha, self.args.min_effect
    comparison_lib.judge_family([ends for ends, _, _ in rows.values()
                                 if ends is not None], alpha, min_effect)
    for _, low, high in rows.values():
      for half in (low, high):
        if half is not None:
          comparison_lib.judge_family([half], alpha, min_effect)

  def judge(self, one, comparisons):
    middle = one.middle()
    ends, low, high = comparisons
    lines = [self.comparison_line('ends', one.good, one.bad, ends)]
    if middle is not None:
      lines.append(self.comparison_line('low', one.good, middle, low))
      lines.append(self.comparison_line('high', middle, one.bad, high))
    judgement = search.decide(ends, low, high, not one.confirmed, one.good,
                              middle, one.bad, self.args.min_effect)
    return judgement, lines

  def step(self, group):
    """Measures one group's middle and ends; returns False if interrupted."""
    self.step_number += 1
    first = group[0]
    middle = first.middle()
    versions = first.versions_to_run()
    self.say()
    self.say('== step %d: %s (good) .. %s (bad), %d release(s) between: %s, '
             '%d run(s) each; %s' % (
                 self.step_number, first.good, first.bad,
                 len(first.releases) - 2,
                 ('%s against both ends' % middle) if middle else
                 'the two ends (adjacent)', self.repeat,
                 ', '.join(one.config for one in group)))
    version_of = {version_label(v): v for v in versions}
    made = {one.config: 0 for one in group}
    paths = {one.config: collections.defaultdict(list) for one in group}
    pending = list(group)
    while pending:
      runs = self.plan(pending, versions, made)
      try:
        outcomes = runner.run_all(
            runs, self.args.result_dir, python=sys.executable,
            benchmark_script=self.args.benchmark_script,
            timeout=self.args.timeout, stream=self.stream,
            noise=suite.noise_control(self.args))
      except KeyboardInterrupt:
        self.say('interrupted')
        return False
      if runner.anything_to_report(outcomes):
        self.say(runner.failure_report(outcomes))
      for outcome in outcomes:
        if outcome.ok:
          paths[outcome.run.name][version_of[outcome.run.label]] += (
              outcome.record_paths)
      for one in pending:
        made[one.config] = self.repeat
      pending = self.settle(pending, paths, middle)
    return True

  def next_repeat(self, judgements):
    """Runs per release after an unsettled step: what the spread observed
    says catches a 5% slowdown (compare's `runs for 5%` of the comparisons
    the judgements rest on) when that is more than now, else twice now."""
    planned = max((j.deciding.runs_needed for j in judgements
                   if j.deciding is not None), default=0)
    return planned if planned > self.repeat else 2 * self.repeat

  def settle(self, pending, paths, middle):
    """Judges each pending configuration; returns those that need more runs
    (after raising self.repeat), stopping the ones at the cap."""
    rows = {one.config: self.comparisons(one, {
        v: paths[one.config][v] for v in one.versions_to_run()})
            for one in pending}
    self.judge_all(rows)
    judged = [(one,) + self.judge(one, rows[one.config]) for one in pending]
    repeat = self.next_repeat([judgement for _, judgement, _ in judged
                               if judgement.action == search.MORE_RUNS])
    more = []
    for one, judgement, lines in judged:
      self.say('%s:' % one.config)
      for line in lines:
        self.say(line)
      if judgement.action == search.MORE_RUNS:
        if self.repeat < self.args.max_repeat:
          more.append(one)
          self.say('  => more runs: %s' % judgement.reason)
        else:
          one.result = judgement.deciding
          one.stop('inconclusive at %d runs per release (--max_repeat): %s. '
                   '%s; re-run with --good %s --bad %s --repeat %d, on a '
                   'quieter machine if you can' % (
                       self.repeat, judgement.reason,
                       'The slowdown is between %s and %s' % (
                           one.good, one.bad) if one.confirmed else
                       'No slowdown is shown, nor ruled out', one.good,
                       one.bad, repeat))
          self.say('  => stopped: %s' % one.message)
        continue
      one.apply(judgement, middle)
      self.say('  => %s%s' % (judgement.reason, {
          search.OPEN: '; next: %s .. %s' % (one.good, one.bad),
          search.FOUND: '; found'}.get(one.status, '')))
    if more:
      self.repeat = min(repeat, self.args.max_repeat)
      self.say('%s: now %d run(s) per release (the step\'s runs so far '
               'count too)' % (', '.join(o.config for o in more), self.repeat))
    return more

  def run(self):
    """Steps until every range is settled; returns False if interrupted."""
    while True:
      group = search.next_group(self.ranges)
      if not group:
        return True
      # An end without an interpreter can never be measured.
      if any(self.python(v) is None for v in (group[0].good, group[0].bad)):
        for one in group:
          one.stop('the venv of an end (%s or %s) could not be built'
                   % (one.good, one.bad))
        continue
      middle = group[0].middle()
      if middle is not None and self.python(middle) is None:
        for one in group:
          one.apply(search.Judgement(search.SKIP_MIDDLE, 'no venv'), middle)
        self.say('%s: no venv, skipped; measuring the release nearest the '
                 'middle instead' % middle)
        continue
      if not self.step(group):
        return False

  def report(self):
    """The closing lines; returns the exit code."""
    self.say()
    self.say('== result (%d step(s); every run kept in %s)' % (
        self.step_number, self.args.result_dir))
    confidence = 100 * (1 - self.args.alpha)
    for one in self.ranges:
      if one.status == search.FOUND:
        row = one.result
        self.say('%s: first slower in %s (the release after %s): %s (%s, '
                 'Hodges-Lehmann change and its %g%% interval; %d vs %d '
                 'runs)' % (one.config, one.bad, one.good,
                            tables.change_summary(row), row.verdict,
                            confidence, row.baseline_runs, row.candidate_runs))
        self.say('  all runs of the two: tf_cnn_benchmarks compare '
                 '--result_dir %s --by label --baseline %s --candidate %s%s'
                 % (self.args.result_dir, version_label(one.good),
                    version_label(one.bad),
                    ' --allow_injected_slowdown'
                    if self.args.allow_injected_slowdown else ''))
      elif one.status == search.NOT_SLOWER:
        self.say('%s: not slower in %s than in %s (%s): nothing to bisect' % (
            one.config, one.bad, one.good,
            tables.change_summary(one.result) if one.result else 'n/a'))
      else:
        self.say('%s: not found: %s' % (one.config, one.message))
    found = [r for r in self.ranges if r.status == search.FOUND]
    unsettled = [r for r in self.ranges if r.status == search.STOPPED]
    return EXIT_FOUND if found and not unsettled else EXIT_NOT_FOUND


def main(argv=None, stream=None):
  argv = list(sys.argv if argv is None else argv)
  stream = stream or sys.stdout
  own_args, benchmark_flags = suite.split_benchmark_flags(argv[1:])
  try:
    args = build_parser(argv[0]).parse_args(own_args)
  except SystemExit as exit_request:
    return exit_request.code
  try:
    check_args(args)
    suite.check_run_options(args)
    configs = suite.load_configs(args.suite, benchmark_flags, None)
    try:
      listed = releases.list_releases()
    except releases.IndexUnavailable as error:
      print('bisect: cannot list the TensorFlow releases: %s. Check that pip '
            'reaches the package index here (pip.conf, PIP_INDEX_URL).'
            % error, file=stream, flush=True)
      return EXIT_NOT_FOUND
    chain = releases.between(listed, args.good, args.bad)
  except UsageError as error:
    return report_usage_error(error)
  repeat, why = initial_repeat(args.repeat, detection_power.Power.from_file(),
                               sorted({model_of(c) for c in configs}),
                               args.alpha, len(configs))
  if repeat > args.max_repeat:   # a planned count never exceeds the cap
    repeat, why = args.max_repeat, why + ', capped by --max_repeat'

  bisection = Bisection(args, configs, chain, repeat, stream)
  bisection.say('bisect: %d %s releases from %s (good) to %s (bad): %s' % (
      len(chain), venvs.tensorflow_distribution(), args.good, args.bad,
      ' '.join(chain)))
  bisection.say('%d run(s) per release per step (%s), raised when a step is '
                'inconclusive (to what its spread says catches 5%%, or '
                'doubled), up to %d; records in %s' % (
                    repeat, why, args.max_repeat, args.result_dir))
  if args.dry_run:
    first = bisection.ranges[0]
    runs = bisection.plan(bisection.ranges, first.versions_to_run(),
                          {r.config: 0 for r in bisection.ranges})
    return suite.run_plan(runs, args, sys.executable, stream)
  try:
    if not bisection.run():
      return suite.EXIT_INTERRUPTED
  except UsageError as error:   # e.g. runs slowed on purpose, not allowed
    return report_usage_error(error)
  return bisection.report()


if __name__ == '__main__':
  sys.exit(main())
