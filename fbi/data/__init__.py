"""Data that ships with fbi: the built-in sample dataset (sample.yaml)."""
