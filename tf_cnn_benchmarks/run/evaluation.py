"""Evaluation during training and after it: when, and what it found.

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
