"""What a run does, decided once from the flags: the run mode.

Every module that must know whether the run trains, evaluates, runs the
forward pass only or the input only reads RunConfig.mode (or, before a
RunConfig exists, ``of(params)``); nobody decodes --eval, --forward_only or
--input_only again. TensorFlow-free, so the launcher and the train_dir lock
can read it too.
"""

import enum

from tf_cnn_benchmarks.config import flag_checks


class RunMode(enum.Enum):
  # The values are what the report's `Mode:` line and the record's
  # config.mode say.
  TRAINING = 'training'
  TRAINING_AND_EVALUATION = 'training + evaluation'
  EVALUATION = 'evaluation'
  FORWARD_ONLY = 'forward only'
  INPUT_ONLY = 'input only'

  @property
  def trains(self):
    return self in (RunMode.TRAINING, RunMode.TRAINING_AND_EVALUATION)

  @property
  def counts_accuracy(self):
    """Do its steps count correct predictions whatever the flags say?"""
    return self in (RunMode.EVALUATION, RunMode.FORWARD_ONLY)

  @property
  def subset(self):
    """The split its steps read: validation for evaluation and inference,
    as in the original."""
    return ('validation' if self in (RunMode.EVALUATION,
                                     RunMode.FORWARD_ONLY) else 'train')


def of(params):
  """The mode the flags ask for."""
  if params.eval:
    return RunMode.EVALUATION
  if params.input_only:
    return RunMode.INPUT_ONLY
  if params.forward_only:
    return RunMode.FORWARD_ONLY
  if flag_checks.evaluates_during_training(params):
    return RunMode.TRAINING_AND_EVALUATION
  return RunMode.TRAINING
