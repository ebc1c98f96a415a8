"""Surviving crashes: which questions a run trained, and crash-safe recover checkpoints."""
