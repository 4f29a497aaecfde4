"""fbi: find the blind spots of LLM judges (the FBI method and beyond).

The library verbs, each what its command does, returning the typed result the command
prints: ``fbi.evaluate`` (`fbi.judge.evaluate`), ``fbi.hunt``, ``fbi.gate``,
``fbi.watch``, ``fbi.trust`` and ``fbi.report`` — the last five are their packages,
callable as the function of the package's name (``fbi.gate(...)`` is
``fbi.gate.gate(...)``; `fbi.faces.verb_package`). Each is loaded when first used, so
``import fbi`` stays light.
"""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path as _Path

# prompts/, perturbations/ and annotate/ sit beside this package in a source checkout and
# install inside it (fbi.prompts, ...). Run from a checkout (`python -m fbi` there), let
# the package find them beside it too, so every command works before installing — before
# the imports below: the taxonomy reads perturbations/manipulations.yaml as it loads.
_checkout = _Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "annotate" / "app.py").is_file():
    __path__.append(str(_checkout))

from fbi.datasets import Dataset, Validation, load_dataset, validate_dataset, write_dataset  # noqa: E402
from fbi.errors import (  # noqa: E402
    ConfigError,
    DatasetError,
    FbiError,
    InputError,
    MissingExtra,
    MissingKey,
    ModelError,
    Problem,
    UnknownName,
)
from fbi.records import Instance, Provenance, VettingLabel  # noqa: E402
from fbi.taxonomy import (  # noqa: E402
    CATEGORIES,
    PERTURBATION_CATEGORIES,
    SCORE_INVARIANT,
    Ability,
    Category,
    get_category,
)

try:
    __version__ = version("fbi")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"



#: The library verbs that are packages of their own name (see the module docstring).
_VERB_PACKAGES = ("hunt", "gate", "watch", "trust", "report")


def __getattr__(name: str):
    import importlib

    if name == "evaluate":
        return importlib.import_module("fbi.judge").evaluate
    if name in _VERB_PACKAGES:
        return importlib.import_module(f"fbi.{name}")
    raise AttributeError(f"module 'fbi' has no attribute {name!r}")
