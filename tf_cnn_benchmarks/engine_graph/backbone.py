"""--backbone_model_path: start training from another checkpoint's weights.

The model's variables whose name and shape match a variable in the
checkpoint are restored (e.g. a pre-trained feature extractor); the rest
keep their initial values. Only model weights (trainable variables and
batch-norm statistics) are taken: the global step and optimizer slots of
the other run would not mean anything here.
"""

import os

import tensorflow as tf

from models import layers

tf1 = tf.compat.v1


class NoMatchingVariables(ValueError):
  """The checkpoint has none of the model's variables."""


def checkpoint_path(path):
  """The checkpoint prefix: ``path`` itself, or the latest in a folder."""
  if os.path.isdir(path):
    latest = tf1.train.latest_checkpoint(path)
    if latest is None:
      raise FileNotFoundError('--backbone_model_path=%s is a folder with no '
                              'checkpoint in it.' % path)
    return latest
  return path


def _model_weights(built):
  """{checkpoint name: variable} of the model's weights (what a checkpoint
  of this harness names them), without the global step and slots."""
  trainable = {v.ref() for v in built.graph.get_collection(
      tf1.GraphKeys.TRAINABLE_VARIABLES)}
  with built.graph.as_default():  # the manager reads the default graph
    savable = built.variable_manager.savable_variables()
  names = set(savable)

  def is_slot(name):  # an optimizer's slot is named under its variable
    parts = name.split('/')
    return any('/'.join(parts[:i]) in names for i in range(1, len(parts)))

  return {name: v for name, v in savable.items()
          if v.ref() in trainable or (layers.BATCHNORM_SCOPE in name.split('/')
                                and not is_slot(name))}


class BackboneRestorer:
  """Built before the graph is finalised (it adds restore ops); restores
  in the session."""

  def __init__(self, built, path):
    self.path = checkpoint_path(path)
    saved = tf1.train.load_checkpoint(self.path).get_variable_to_shape_map()
    weights = _model_weights(built)
    self.matched = {name: v for name, v in weights.items()
                    if name in saved and v.shape.as_list() == saved[name]}
    if not self.matched:
      raise NoMatchingVariables(
          '--backbone_model_path=%s has none of the %d weights of this model '
          'with the same name and shape (it has e.g. %s; the model has e.g. '
          '%s).' % (path, len(weights), ', '.join(sorted(saved)[:3]),
                    ', '.join(sorted(weights)[:3])))
    self.total = len(weights)
    with built.graph.as_default():
      self.saver = tf1.train.Saver(self.matched)

  def restore(self, sess, reporter):
    self.saver.restore(sess, self.path)
    reporter.say('Restored %d of %d model weights from backbone %s' % (
        len(self.matched), self.total, self.path))
