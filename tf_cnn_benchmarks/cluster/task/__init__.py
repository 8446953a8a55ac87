"""One task of a cluster: its role's work (train or serve), the start protocol,
the progress board and done signals, around the driver's run."""
