"""Evaluation during training, and an evaluator that follows a training run.

During training (--eval_during_training_every_n_steps, _every_n_epochs,
_at_specified_steps, _at_specified_epochs): at those timed steps, and after
the last one, training pauses and the validation split goes through tower
copies of the model that read the training variables (batch norm with its
moving statistics; model_graph._eval_towers). Each evaluation prints the
original's ``Accuracy @ 1 = ... Accuracy @ 5 = ... [N examples]`` line and
is kept, with its step, in the run record. The timed loop's clock stops
while evaluating, so images/sec stays training's. --stop_at_top_1_accuracy
ends training after an evaluation reaches it.

Following a run (--eval with --eval_interval_secs): after evaluating the
latest checkpoint in --train_dir, wait for a newer one, every
--eval_interval_secs, and evaluate it too, until stopped (SIGINT/SIGTERM).
"""

import dataclasses
import math
from typing import Optional


def schedule(params, num_batches, steps_per_epoch):
  """Sorted timed steps (1..num_batches) after which to evaluate.

  ``steps_per_epoch``: training steps in one epoch of the training data.
  The last step is always among them, as in the original (so a run ends
  with the accuracy it reached).
  """
  steps = set()
  if params.eval_during_training_every_n_steps:
    n = params.eval_during_training_every_n_steps
    steps.update(range(n, num_batches + 1, n))
  if params.eval_during_training_every_n_epochs:
    n = max(1, int(round(params.eval_during_training_every_n_epochs *
                         steps_per_epoch)))
    steps.update(range(n, num_batches + 1, n))
  # The lists were checked to be numbers by flag_checks.validate.
  steps.update(int(s) for s in params.eval_during_training_at_specified_steps)
  steps.update(max(1, int(round(float(e) * steps_per_epoch)))
               for e in params.eval_during_training_at_specified_epochs)
  steps = {s for s in steps if 1 <= s <= num_batches}
  steps.add(num_batches)
  return sorted(steps)


def steps_per_evaluation(params, validation_examples, eval_global_batch):
  """Validation steps of one evaluation: --num_eval_batches, else
  --num_eval_epochs of the validation set, else one whole epoch of it."""
  if params.num_eval_batches:
    return params.num_eval_batches
  epochs = params.num_eval_epochs or 1.0
  return max(1, int(math.ceil(epochs * validation_examples /
                              eval_global_batch)))


@dataclasses.dataclass
class Evaluation:
  step: int            # timed training step after which it ran (0: --eval)
  global_step: int
  top_1_accuracy: float
  top_5_accuracy: float
  num_examples: int

  def as_dict(self):
    return dataclasses.asdict(self)


def accuracy_line(evaluation):
  """The original's accuracy line (scripts parse it)."""
  return 'Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [%d examples]' % (
      evaluation.top_1_accuracy, evaluation.top_5_accuracy,
      evaluation.num_examples)


class DuringTraining:
  """Runs the evaluations of a training run; see the module docstring."""

  def __init__(self, params, built, steps, eval_steps, images_per_step):
    self.params = params
    self.built = built
    self._due = set(steps)
    self._eval_steps = eval_steps
    self._images_per_step = images_per_step

  def due(self, step):
    return step in self._due

  def run(self, sess, step, reporter, options=None):
    """Evaluates now (after timed step ``step``); returns the Evaluation."""
    global_step = int(sess.run(self.built.global_step))
    reporter.line('Running evaluation at global step %d' % global_step)
    correct_1 = correct_5 = 0
    fetches = (self.built.eval_top_1_correct, self.built.eval_top_5_correct)
    for _ in range(self._eval_steps):
      top_1, top_5 = sess.run(fetches, options=options)
      correct_1 += int(top_1)
      correct_5 += int(top_5)
    examples = self._eval_steps * self._images_per_step
    return Evaluation(step, global_step, correct_1 / examples,
                      correct_5 / examples, examples)

  def reached_target(self, evaluation: Optional[Evaluation]):
    target = self.params.stop_at_top_1_accuracy
    return (evaluation is not None and target is not None and
            evaluation.top_1_accuracy >= target)
