"""Where the data folders that ship inside the package are found.

``prompts/``, ``perturbations/`` and ``annotate/`` sit at the top of the repository and
install as ``fbi.prompts`` and so on; from a source checkout ``fbi/__init__.py`` makes
the same names resolve to the folders beside the package.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable


def package_folder(name: str) -> Traversable:
    """The ``fbi.NAME`` data folder (``prompts``, ``perturbations``, ``annotate``)."""
    return resources.files(f"fbi.{name}")
