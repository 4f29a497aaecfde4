"""Perturbation templates and recipes (data, not code); installed as ``fbi.perturbations``."""
