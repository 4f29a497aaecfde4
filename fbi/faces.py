"""Lazy package faces: a package's public names, each imported from its private module
when first used. ``import fbi.report`` then costs nothing until a name is asked for, so a
command that needs one renderer does not load the others (nor numpy and scipy).

A lazy face names each public name as any face does — in ``__all__`` and in the import
that brings it, here under ``if TYPE_CHECKING:`` (what readers, type checkers and the API
reference see). Those imports are also what loads a name: `lazy_face` reads them from the
face's own source, so no third list (name → module) is kept by hand.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from typing import Any


def exports_of(package: str) -> dict[str, str]:
    """Name → the private module it comes from, as the face's ``if TYPE_CHECKING:``
    imports say it (``from fbi.report._html import render_html``: ``render_html`` →
    ``fbi.report._html``)."""
    face = sys.modules[package]
    with open(face.__file__, encoding="utf-8") as file:  # type: ignore[arg-type]
        tree = ast.parse(file.read())
    exports = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and \
                node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    exports.update({alias.asname or alias.name: statement.module
                                    for alias in statement.names})
    return exports


def lazy_face(package: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of a face: ``name`` imported from its private module
    (`exports_of`) on first use, and kept in the face after."""
    exports: dict[str, str] = {}

    def __getattr__(name: str) -> Any:
        if not exports:
            exports.update(exports_of(package))
        module = exports.get(name)
        if module is None or name not in sys.modules[package].__all__:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # found once
        return value

    return __getattr__
