"""The model zoo: one module per family, looked up through models.registry."""
