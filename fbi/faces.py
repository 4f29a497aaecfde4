"""Lazy package faces: a package's public names, each imported from its private module
when first used. ``import fbi.report`` then costs nothing until a name is asked for, so a
command that needs one renderer does not load the others (nor numpy and scipy).

A face lists its names twice, on purpose: in ``_EXPORTS`` (name → private module, what
loads them) and under ``if TYPE_CHECKING:`` (what readers, type checkers and the API
reference see); ``tests/test_layout.py`` checks that the two agree.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_face(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of a face: ``name`` imported from
    ``package.exports[name]`` on first use, and kept in the face after."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)  # found once
        return value

    return __getattr__
