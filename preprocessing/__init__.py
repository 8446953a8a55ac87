"""Input pipelines: synthetic data, ImageNet TFRecords, CIFAR-10 batches."""
