"""The steps of a run: warm-up, the timed loop, and what happens between steps.

Between timed steps: the step row every --display_every steps, a
checkpoint when one is due, evaluation during training when due (with the
clock stopped), and TensorBoard summaries every --save_summaries_steps
(fetched in the step's own session.run, as the original did). A run
evaluating checkpoints (--eval) adds up accuracy instead, and with
--eval_interval_secs goes on to every newer checkpoint.

The loop runs under the run's watchdog (``watch``, liveness/watchdog.py):
it checks for a stop request before every step, and each warm-up step is
a phase of its own, announced when a slow model takes seconds over it.
"""

import math
import time

import tensorflow as tf

from tf_cnn_benchmarks import evaluation
from tf_cnn_benchmarks import injected_slowdown

tf1 = tf.compat.v1


class StepLoop:

  def __init__(self, params, rc, built, runner, times, reporter, watch,
               result, checkpointer, evaluator=None, summaries=None,
               metric_log=None):
    self.params = params
    self.rc = rc
    self.built = built
    self.runner = runner
    self.times = times
    self.reporter = reporter
    self.watch = watch
    self.result = result
    self.checkpointer = checkpointer
    self.evaluator = evaluator
    self.summaries = summaries
    # --benchmark_log_dir's logger (benchmark_logger.py), or None.
    self.metric_log = metric_log
    self.with_accuracy = built.top_1_correct is not None
    # Correct predictions and examples seen by the timed steps.
    self.correct_1 = self.correct_5 = self.examples = 0
    # Test-only idle time after each timed step (injected_slowdown.py).
    self.pause = injected_slowdown.Pause(injected_slowdown.from_environment())

  def check_stop(self):
    self.watch.check_stop()

  def warm_up(self):
    self.reporter.line('Running warm up')
    count = self.rc.num_warmup_batches
    for i in range(count):
      with self.watch.phase(None, 'warm-up step %d of %d' % (i + 1, count)):
        self.times.add_warmup(self.runner.step().seconds)
    self.reporter.line('Done warm up')

  def run(self, sess, step_options):
    """The timed loop; its wall time (evaluations excluded) goes to times."""
    rc, times = self.rc, self.times
    self.reporter.loss_name = self.params.loss_type_to_report
    self.reporter.table_head(self.with_accuracy and rc.training)
    # Summaries are labelled with the global step after their step (one
    # increment per local step), read once here rather than raced for in
    # the step's own run.
    self._first_global_step = (int(sess.run(self.built.global_step))
                               if self.summaries else None)
    clock_start = time.perf_counter()
    try:
      for step in range(1, rc.num_batches + 1):
        self.check_stop()
        summary = self.summaries.fetch(step) if self.summaries else None
        done = self.runner.step(
            {'summary': summary} if summary is not None else None)
        values = done.values
        times.add(done.seconds, float(values['loss']))
        # Inside the clock: total images/sec shows it, step times do not.
        self.pause.after_step(done.seconds)
        self._after_step(sess, step, values)
        if self.evaluator is not None and self.evaluator.due(step):
          paused = time.perf_counter()
          evaluated = self._evaluate(sess, step, step_options)
          clock_start += time.perf_counter() - paused
          if self.evaluator.reached_target(evaluated):
            self.result.stopped_at_step = step
            self.reporter.line(
                'Stopping: top-1 accuracy %.4f reached '
                '--stop_at_top_1_accuracy=%g after step %d.' % (
                    evaluated.top_1_accuracy,
                    self.params.stop_at_top_1_accuracy, step))
            break
    finally:
      times.timed_wall_time = time.perf_counter() - clock_start

  def _after_step(self, sess, step, values):
    result = self.result
    if result.diverged_at_step is None and not math.isfinite(values['loss']):
      # Speed is still measured, but say once that the numbers being
      # trained on are no longer numbers.
      result.diverged_at_step = step
      self.reporter.line('Warning: the loss is %s at step %d: training '
                         'diverged. Try a lower --init_learning_rate.' % (
                             values['loss'], step))
    accuracy = self._count_accuracy(values)
    if step == 1 or step % self.params.display_every == 0:
      ewma = self.params.display_perf_ewma
      # The original treated 0 like unset: the plain mean.
      speed = (self.times.ewma_speed(ewma) if ewma
               else self.times.mean_speed())
      self.reporter.step_row(step, self.times, values['loss'], accuracy,
                             images_per_sec=speed)
      if self.metric_log is not None:
        self.metric_log.log_step_row(step, speed, accuracy)
    if 'summary' in values:
      self.summaries.write(values['summary'], self._first_global_step + step,
                           self.times.mean_speed())
    self.checkpointer.maybe_save(sess, step)

  def _count_accuracy(self, values):
    """Adds a step's correct predictions up; returns its (top-1, top-5)
    accuracy when training shows them on the step row, else None."""
    if not self.with_accuracy:
      return None
    self.correct_1 += int(values['top_1'])
    self.correct_5 += int(values['top_5'])
    self.examples += self.rc.batch_size_per_worker
    if not self.rc.training:
      return None
    return (values['top_1'] / self.rc.batch_size_per_worker,
            values['top_5'] / self.rc.batch_size_per_worker)

  def _evaluate(self, sess, step, step_options):
    evaluated = self.evaluator.run(sess, step, self.reporter, step_options)
    self.record_evaluation(evaluated)
    return evaluated

  def record_evaluation(self, evaluated, images_per_sec=None):
    """Every evaluation goes here, once: the original's accuracy line, the
    run record, TensorBoard, the benchmark log (as each happens, so an
    evaluator stopped by a signal keeps them all)."""
    self.reporter.line(evaluation.accuracy_line(evaluated))
    self.result.evaluations.append(evaluated.as_dict())
    if self.summaries is not None:
      self.summaries.write_evaluation(evaluated)
    if self.metric_log is not None:
      self.metric_log.log_evaluation(evaluated.as_dict(), images_per_sec)

  def evaluation_of_timed_steps(self, global_step):
    """--eval: the accuracy the timed steps added up (None: no examples)."""
    if not self.examples:
      return None
    return evaluation.Evaluation(0, global_step,
                                 self.correct_1 / self.examples,
                                 self.correct_5 / self.examples,
                                 self.examples)

  def follow_checkpoints(self, sess, restore_newer):
    """--eval_interval_secs: evaluate every newer checkpoint, until stopped.

    ``restore_newer()`` restores the latest checkpoint if it is newer than
    the last one evaluated and returns True, else False.
    """
    interval = self.params.eval_interval_secs
    while True:
      deadline = time.monotonic() + interval
      with self.watch.doing('waiting for a newer checkpoint', idle=True):
        while time.monotonic() < deadline:
          self.check_stop()
          time.sleep(min(0.2, interval))
      if not restore_newer():
        continue
      self.correct_1 = self.correct_5 = self.examples = 0
      for _ in range(self.rc.num_batches):
        self.check_stop()
        self._count_accuracy(self.runner.step().values)
      self.record_evaluation(self.evaluation_of_timed_steps(
          int(sess.run(self.built.global_step))))
