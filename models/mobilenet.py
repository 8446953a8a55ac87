"""Placeholder: filled in by the model zoo work."""
