"""The step math both engines share: the towers' forward pass and loss, weight
decay, the update in place, the learning rate and optimizer."""
