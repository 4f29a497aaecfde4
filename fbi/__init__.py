"""fbi: find the blind spots of LLM judges (the FBI method and beyond)."""

from importlib.metadata import PackageNotFoundError, version

from fbi.errors import (
    BudgetExceeded,
    ConfigError,
    DatasetError,
    FbiError,
    InputError,
    MissingExtra,
    ModelError,
    Problem,
    UnknownName,
)
from fbi.records import Instance, Provenance, VettingLabel
from fbi.sources import Dataset, Validation, load_dataset, validate_dataset, write_dataset
from fbi.taxonomy import (
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

__all__ = [
    "CATEGORIES",
    "PERTURBATION_CATEGORIES",
    "SCORE_INVARIANT",
    "Ability",
    "BudgetExceeded",
    "Category",
    "ConfigError",
    "Dataset",
    "DatasetError",
    "FbiError",
    "InputError",
    "Instance",
    "MissingExtra",
    "ModelError",
    "Problem",
    "Provenance",
    "UnknownName",
    "Validation",
    "VettingLabel",
    "__version__",
    "get_category",
    "load_dataset",
    "validate_dataset",
    "write_dataset",
]
