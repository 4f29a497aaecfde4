"""fbi: find the blind spots of LLM judges (the FBI method and beyond)."""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path as _Path

from fbi.datasets import Dataset, Validation, load_dataset, validate_dataset, write_dataset
from fbi.errors import (
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
from fbi.records import Instance, Provenance, VettingLabel
from fbi.taxonomy import (
    CATEGORIES,
    PERTURBATION_CATEGORIES,
    SCORE_INVARIANT,
    Ability,
    Category,
    get_category,
)

# prompts/, perturbations/ and annotate/ sit beside this package in a source checkout and
# install inside it (fbi.prompts, ...). Run from a checkout (`python -m fbi` there), let
# the package find them beside it too, so every command works before installing.
_checkout = _Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "annotate" / "app.py").is_file():
    __path__.append(str(_checkout))

try:
    __version__ = version("fbi")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

