"""Tickwheel's own scenarios; each `run(...)` returns the figures `tickwheel bench` prints."""
