"""Where the data folders that ship inside the package are found.

``prompts/``, ``perturbations/`` and ``annotate/`` sit at the top of the repository and
install as ``fbi.prompts`` and so on. Run from a source checkout (``python -m fbi`` in
the repository, which puts the checkout's ``fbi/`` first on the path), those
subpackages are not importable, so the top-level folder is used instead.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path


def package_folder(name: str) -> Traversable:
    """The installed ``fbi.NAME`` folder, or the checkout's ``NAME/``."""
    try:
        return resources.files(f"fbi.{name}")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / name
