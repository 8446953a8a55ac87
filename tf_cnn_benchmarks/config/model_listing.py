"""--list_models: the zoo, per dataset, with image size and default batch."""

from models import registry


def print_models():
  for dataset in registry.DATASETS:
    print('%s (%d classes):' % (dataset, registry.NUM_CLASSES[dataset]))
    for spec in registry.all_specs():
      if spec.dataset == dataset:
        size = ('ids' if spec.reads_ids else
                '%3dx%-3d' % (spec.image_size, spec.image_size))
        print('  %-22s %-7s  batch %-4d  %s' % (
            spec.name, size, spec.default_batch_size, spec.description))
  # So the original's names that would fail here are visible up front.
  names = ['%s (%s)' % (name, dataset) if dataset else name
           for name, dataset in sorted(registry.NOT_PROVIDED,
                                       key=lambda k: k[0])]
  print('The original had these too; not built here (--model=NAME says '
        'why): %s.' % ', '.join(names))
