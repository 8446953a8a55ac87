"""The steps of a run: warm-up, the timed loop, and what happens between steps.

Between timed steps: the step row every --display_every steps, and what the
engine adds there (``extras``: the graph engine's checkpoints, TensorBoard
summaries and benchmark log, engine_graph/step_extras.py); evaluation during
training when due, with the clock stopped. A run evaluating checkpoints
(--eval) adds up accuracy instead, and with --eval_interval_secs goes on to
every newer checkpoint.

The loop runs under the run's watchdog (liveness/watchdog.py): it checks
for a stop request before every step, and each warm-up step is a phase of
its own, announced when a slow model takes seconds over it. It runs either
engine's steps (a contracts.StepRunner) and loads no TensorFlow.
"""

import dataclasses
import math
import time

from tf_cnn_benchmarks import test_hooks
from tf_cnn_benchmarks.run import evaluation


class NoExtras:
  """The extras of an engine with nothing between steps (the tf2 engine:
  what the graph engine adds there is refused for it by flag_checks.py)."""

  with_accuracy = False

  def timed_loop_starts(self):
    pass

  def fetches(self, step):
    del step

  def after_step(self, step, values):
    del step, values

  def step_row(self, step, speed, accuracy):
    del step, speed, accuracy

  def evaluation_due(self, step):
    del step
    return False

  def evaluate(self, step):
    raise AssertionError('no evaluation is ever due (step %d)' % step)

  def evaluation_recorded(self, evaluated, images_per_sec):
    del evaluated, images_per_sec

  def global_step(self):
    """None: the engine keeps no global step the loop could read."""
    return None


class StepLoop:

  def __init__(self, state, runner, extras=None):
    """``state``: the run's run_state.RunState; ``runner``: its
    contracts.StepRunner; ``extras``: contracts.StepExtras (NoExtras when
    None)."""
    self.state = state
    self.params = state.params
    self.runner = runner
    self.extras = extras or NoExtras()
    # Correct predictions and examples seen by the timed steps.
    self.correct_1 = self.correct_5 = self.examples = 0
    # Test-only idle time after each timed step (test_hooks/), or None.
    self.pause = test_hooks.slowdown_pause()
    # The run's start (MLPerf's run_start: the first training step, warm-up
    # included; run/evaluation.py) and the warm-up's wall time, for the
    # time to accuracy.
    self.run_started = None
    self.warmup_seconds = 0.0

  def warm_up(self):
    state = self.state
    state.reporter.say('Running warm up')
    count = state.rc.num_warmup_batches
    self.run_started = time.perf_counter()
    state.milestones.run_starts(state.rc)
    for i in range(count):
      with state.watch.phase(None, 'warm-up step %d of %d' % (i + 1, count)):
        state.times.add_warmup(self.runner.step().seconds)
      state.milestones.trained(i + 1)
    self.warmup_seconds = time.perf_counter() - self.run_started
    state.reporter.say('Done warm up')

  def run(self):
    """The timed loop; its wall time (evaluations excluded) goes to times."""
    state, extras = self.state, self.extras
    rc, times = state.rc, state.times
    state.reporter.loss_name = self.params.loss_type_to_report
    state.reporter.table_head(extras.with_accuracy and rc.training)
    extras.timed_loop_starts()
    clock_start = time.perf_counter()
    try:
      for step in range(1, rc.num_batches + 1):
        state.watch.check_stop()
        done = self.runner.step(extras.fetches(step))
        state.milestones.trained(rc.num_warmup_batches + step)
        values = done.values
        times.add(done.seconds, float(values['loss']))
        # Inside the clock: total images/sec shows it, step times do not.
        if self.pause is not None:
          self.pause.after_step(done.seconds)
        self._after_step(step, values)
        if extras.evaluation_due(step):
          paused = time.perf_counter()
          state.milestones.evaluation_starts(step)
          evaluated = self._on_the_curve(
              extras.evaluate(step), training_sec=(
                  self.warmup_seconds + paused - clock_start))
          self.record_evaluation(evaluated)
          clock_start += time.perf_counter() - paused
          if self._reached_target(evaluated):
            state.result.stopped_at_step = step
            state.result.target = evaluation.Target.reached(
                self.params.stop_at_top_1_accuracy, evaluated)
            state.reporter.say(
                'Stopping: top-1 accuracy %.4f reached '
                '--stop_at_top_1_accuracy=%g after step %d.' % (
                    evaluated.top_1_accuracy,
                    self.params.stop_at_top_1_accuracy, step))
            break
    finally:
      times.timed_wall_time = time.perf_counter() - clock_start

  def _on_the_curve(self, evaluated, training_sec):
    """The evaluation with its place on the run's curve: epochs trained,
    seconds since the run's start, training seconds alone."""
    rc = self.state.rc
    started = self.run_started if self.run_started is not None else (
        time.perf_counter())
    return dataclasses.replace(
        evaluated,
        epoch=evaluated.global_step * rc.global_batch_size / float(
            rc.examples_per_epoch),
        elapsed_sec=time.perf_counter() - started, training_sec=training_sec)

  def _reached_target(self, evaluated):
    target = self.params.stop_at_top_1_accuracy
    return (evaluated is not None and target is not None and
            evaluated.top_1_accuracy >= target)

  def _after_step(self, step, values):
    state = self.state
    result = state.result
    if result.diverged_at_step is None and not math.isfinite(values['loss']):
      # Speed is still measured, but say once that the numbers being
      # trained on are no longer numbers.
      result.diverged_at_step = step
      state.reporter.say('Warning: the loss is %s at step %d: training '
                          'diverged. Try a lower --init_learning_rate.' % (
                              values['loss'], step))
    accuracy = self._count_accuracy(values)
    if step == 1 or step % self.params.display_every == 0:
      ewma = self.params.display_perf_ewma
      # The original treated 0 like unset: the plain mean.
      speed = (state.times.ewma_speed(ewma) if ewma
               else state.times.mean_speed())
      state.reporter.step_row(step, state.times, values['loss'], accuracy,
                              images_per_sec=speed)
      self.extras.step_row(step, speed, accuracy)
    self.extras.after_step(step, values)

  def _count_accuracy(self, values):
    """Adds a step's correct predictions up; returns its (top-1, top-5)
    accuracy when training shows them on the step row, else None."""
    if not self.extras.with_accuracy:
      return None
    rc = self.state.rc
    self.correct_1 += int(values['top_1'])
    self.correct_5 += int(values['top_5'])
    self.examples += rc.batch_size_per_worker
    if not rc.training:
      return None
    return (values['top_1'] / rc.batch_size_per_worker,
            values['top_5'] / rc.batch_size_per_worker)

  def record_evaluation(self, evaluated, images_per_sec=None):
    """Every evaluation goes here, once: the original's accuracy line, the
    run record, and the engine's extras (TensorBoard, the benchmark log),
    as each happens, so an evaluator stopped by a signal keeps them all."""
    self.state.reporter.say(evaluation.accuracy_line(evaluated))
    self.state.result.evaluations.append(evaluated.as_dict())
    self.state.milestones.evaluated(evaluated)
    self.extras.evaluation_recorded(evaluated, images_per_sec)

  def evaluation_of_timed_steps(self):
    """--eval: the accuracy the timed steps added up (None: no examples)."""
    if not self.examples:
      return None
    return evaluation.Evaluation(0, self.extras.global_step(),
                                 self.correct_1 / self.examples,
                                 self.correct_5 / self.examples,
                                 self.examples)

  def follow_checkpoints(self, restore_newer):
    """--eval_interval_secs: evaluate every newer checkpoint, until stopped.

    ``restore_newer()`` restores the latest checkpoint if it is newer than
    the last one evaluated and returns True, else False.
    """
    interval = self.params.eval_interval_secs
    watch = self.state.watch
    while True:
      deadline = time.monotonic() + interval
      with watch.doing('waiting for a newer checkpoint', idle=True):
        while time.monotonic() < deadline:
          watch.check_stop()
          time.sleep(min(0.2, interval))
      if not restore_newer():
        continue
      self.correct_1 = self.correct_5 = self.examples = 0
      for _ in range(self.state.rc.num_batches):
        watch.check_stop()
        self._count_accuracy(self.runner.step().values)
      self.record_evaluation(self.evaluation_of_timed_steps())
