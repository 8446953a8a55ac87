"""The dashboard's answering charts, one question each (matplotlib Figures):
change.py (is the candidate slower?), versions.py (how does each TensorFlow
version compare with a reference?), convergence.py (which reaches its
accuracy first, and at what memory?)."""
