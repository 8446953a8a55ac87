"""What the graph engine adds between the step loop's steps
(contracts.StepExtras): TensorBoard summaries, checkpoints, the benchmark
log, and evaluation during training in the training session.

Evaluation during training (run/evaluation.py says when): the validation
split goes through tower copies of the model that read the training
variables (model_graph._eval_towers), for rc.eval_steps steps.
"""

from tf_cnn_benchmarks.run import evaluation


class Evaluator:
  """Runs the evaluations of a training run in its session."""

  def __init__(self, built, steps, eval_steps, images_per_step):
    self.built = built
    self._due = set(steps)
    self._eval_steps = eval_steps
    self._images_per_step = images_per_step

  @classmethod
  def of_run(cls, rc, built):
    """The run's evaluator, or None when it does not evaluate during
    training."""
    if built.eval_top_1_correct is None:
      return None
    steps_per_epoch = rc.examples_per_epoch / rc.global_batch_size
    return cls(built, evaluation.schedule(rc.params, rc.num_batches,
                                          steps_per_epoch),
               rc.eval_steps, rc.eval_batch_size_per_worker)

  def due(self, step):
    return step in self._due

  def run(self, sess, step, reporter, options=None):
    """Evaluates now (after timed step ``step``); returns the Evaluation."""
    global_step = int(sess.run(self.built.global_step))
    reporter.say('Running evaluation at global step %d' % global_step)
    correct_1 = correct_5 = 0
    fetches = (self.built.eval_top_1_correct, self.built.eval_top_5_correct)
    for _ in range(self._eval_steps):
      top_1, top_5 = sess.run(fetches, options=options)
      correct_1 += int(top_1)
      correct_5 += int(top_5)
    examples = self._eval_steps * self._images_per_step
    return evaluation.Evaluation(step, global_step, correct_1 / examples,
                                 correct_5 / examples, examples)


class GraphExtras:
  """contracts.StepExtras of a run in session ``sess``; the summary writer,
  checkpointer, evaluator and benchmark log may each be None (not
  wanted)."""

  def __init__(self, state, built, sess, step_options, checkpointer,
               evaluator=None, summaries=None, metric_log=None):
    self.state = state
    self.built = built
    self.sess = sess
    self.step_options = step_options
    self.checkpointer = checkpointer
    self.evaluator = evaluator
    self.summaries = summaries
    # --benchmark_log_dir's logger (benchmark_logger.py), or None.
    self.metric_log = metric_log
    self.with_accuracy = built.top_1_correct is not None
    self._first_global_step = None

  def global_step(self):
    return int(self.sess.run(self.built.global_step))

  def timed_loop_starts(self):
    # Summaries are labelled with the global step after their step (one
    # increment per local step), read once here rather than raced for in
    # the step's own run.
    if self.summaries:
      self._first_global_step = self.global_step()

  def fetches(self, step):
    summary = self.summaries.fetch(step) if self.summaries else None
    return {'summary': summary} if summary is not None else None

  def step_row(self, step, speed, accuracy):
    if self.metric_log is not None:
      self.metric_log.log_step_row(step, speed, accuracy)

  def after_step(self, step, values):
    if 'summary' in values:
      self.summaries.write(values['summary'], self._first_global_step + step,
                           self.state.times.mean_speed())
    self.checkpointer.maybe_save(self.sess, step)

  def evaluation_due(self, step):
    return self.evaluator is not None and self.evaluator.due(step)

  def evaluate(self, step):
    return self.evaluator.run(self.sess, step, self.state.reporter,
                              self.step_options)

  def evaluation_recorded(self, evaluated, images_per_sec):
    if self.summaries is not None:
      self.summaries.write_evaluation(evaluated)
    if self.metric_log is not None:
      self.metric_log.log_evaluation(evaluated.as_dict(), images_per_sec)
