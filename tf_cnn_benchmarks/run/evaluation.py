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

Time to accuracy (--stop_at_top_1_accuracy): every evaluation during
training also carries the epochs trained, the wall time since the run's
start and the training time alone, so the run's evaluations are its curve;
the one that reaches the target gives the time, epochs and steps to target
(``Target``). The run's start is MLPerf's run_start: the first training
step (warm-up included), after the graph, the session and the
initialisation (MLPerf's init phase, which its clock leaves out); from
there the wall clock counts everything, evaluations and input included, as
MLPerf's time to train does. The training time counts the training steps
alone (warm-up and timed steps, evaluations left out). A run that ends
without reaching the target has the status ``target_not_reached`` and exit
code 5 (exit_codes.TARGET_NOT_REACHED): it ran and measured, but did not
converge.

Following a run (--eval with --eval_interval_secs): after evaluating the
latest checkpoint in --train_dir, wait for a newer one, every
--eval_interval_secs, and evaluate it too, until stopped (SIGINT/SIGTERM).
"""

import dataclasses
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



@dataclasses.dataclass
class Evaluation:
  step: int            # timed training step after which it ran (0: --eval)
  global_step: int
  top_1_accuracy: float
  top_5_accuracy: float
  num_examples: int
  # During training only (None with --eval): epochs of training data the
  # model has trained on (global step x global batch / epoch size); seconds
  # since the run's start when the evaluation ended; training seconds alone
  # until it began.
  epoch: Optional[float] = None
  elapsed_sec: Optional[float] = None
  training_sec: Optional[float] = None

  def as_dict(self):
    return dataclasses.asdict(self)


@dataclasses.dataclass
class Target:
  """Where an evaluation reached --stop_at_top_1_accuracy."""
  top_1_accuracy: float    # the target
  reached_top_1: float     # what the evaluation found
  time_sec: float          # wall clock from the run's start (MLPerf's)
  training_time_sec: float
  steps: int               # training steps (global step)
  epochs: float

  @classmethod
  def reached(cls, target, evaluated):
    return cls(target, evaluated.top_1_accuracy, evaluated.elapsed_sec,
               evaluated.training_sec, evaluated.global_step,
               evaluated.epoch)

  def line(self):
    return ('Time to target top-1 %.4f: %.1f s (training %.1f s), '
            '%.2f epochs, %d steps' % (self.top_1_accuracy, self.time_sec,
                                       self.training_time_sec, self.epochs,
                                       self.steps))


def not_reached_line(target, evaluations):
  """The report's line for a run that ended short of its target."""
  if not evaluations:
    return 'Target top-1 %.4f not reached: no evaluation ran.' % target
  best = max(evaluations, key=lambda e: e['top_1_accuracy'])
  last = evaluations[-1]
  return ('Target top-1 %.4f not reached: best %.4f (epoch %.2f, step %d) '
          'in %d evaluations over %.2f epochs.' % (
              target, best['top_1_accuracy'], best['epoch'] or 0.0,
              best['global_step'], len(evaluations), last['epoch'] or 0.0))


def target_line(params, steps_per_epoch):
  """The header's Target value (None without --stop_at_top_1_accuracy)."""
  if params.stop_at_top_1_accuracy is None:
    return None
  return 'top-1 %.4f on validation (--stop_at_top_1_accuracy), evaluated %s' % (
      params.stop_at_top_1_accuracy, _schedule_words(params, steps_per_epoch))


def _schedule_words(params, steps_per_epoch):
  words = []
  if params.eval_during_training_every_n_steps:
    words.append('every %d steps' % params.eval_during_training_every_n_steps)
  if params.eval_during_training_every_n_epochs:
    words.append('every %g epochs (%d steps)' % (
        params.eval_during_training_every_n_epochs,
        max(1, int(round(params.eval_during_training_every_n_epochs *
                         steps_per_epoch)))))
  if params.eval_during_training_at_specified_steps:
    words.append('after steps %s' % ','.join(
        params.eval_during_training_at_specified_steps))
  if params.eval_during_training_at_specified_epochs:
    words.append('after epochs %s' % ','.join(
        params.eval_during_training_at_specified_epochs))
  return ', '.join(words + ['and after the last step'])


def accuracy_line(evaluation):
  """The original's accuracy line (scripts parse it)."""
  return 'Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [%d examples]' % (
      evaluation.top_1_accuracy, evaluation.top_5_accuracy,
      evaluation.num_examples)
