"""The contract between input pipelines and the driver.

An InputSource makes, inside the graph being built, one (images, labels) pair
per tower. Images are float32 NHWC of the model's size, in the range the
model expects; labels are int32 class ids of shape [batch]. The driver
transposes to NCHW and casts to the compute dtype itself, so every source
has one output format. A model that reads ids instead of images (ncf) gets
int32 ids of shape [batch, columns] in the images' place, from a synthetic
source only.
"""

import abc


class InputSource(abc.ABC):
  """Per-tower input tensors for one run."""

  # Shown in the report's `Dataset:` line, e.g. 'imagenet (synthetic)'.
  description: str = ''
  # True when no real data is read.
  synthetic: bool = True
  # Examples in one epoch of the subset being read (num_epochs -> steps).
  num_examples_per_epoch: int = 0

  @abc.abstractmethod
  def tower_batches(self, tower_devices):
    """Returns [(images, labels)] with one pair per device in tower_devices.

    Called once, inside the graph; each pair's ops are placed so that the
    tensors end up on that tower's device.
    """

  def initializers(self):
    """Ops to run once after variable initialisation (iterators, tables)."""
    return []
