"""Measurements of a run: FLOPs, peak, MFU, op time, CPU share, environment."""
