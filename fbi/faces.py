"""Package faces: a package's public names are the names its ``__init__`` imports from
its own modules, written once, where they are imported. No face keeps a second list
(``__all__``): `public_names` reads a face's imports from its source, and the API
reference reads them the same way (``docs/griffe_faces.py``).

A lazy face (`lazy_face`) imports each name from its private module when first used, so
``import fbi.report`` costs nothing until a name is asked for and a command that needs one
renderer does not load the others (nor numpy and scipy). Its imports sit under
``if TYPE_CHECKING:`` (what readers, type checkers and the API reference see), and they
are also what loads a name: no name → module list is kept by hand.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any


def _statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """A face's top-level statements, those under ``if TYPE_CHECKING:`` included."""
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and \
                node.test.id == "TYPE_CHECKING":
            yield from node.body
        else:
            yield node


@cache
def face_imports(package: str, path: str | None = None) -> dict[str, str]:
    """Name → module of every name the face of ``package`` exports: what it imports from
    its own modules (``from fbi.report._html import render_html``: ``render_html`` →
    ``fbi.report._html``); the top-level face ``fbi`` exports what it imports from any
    of fbi's modules. ``path``: the face's file (default: the imported package's)."""
    source = Path(path or sys.modules[package].__file__)  # type: ignore[arg-type]
    tree = ast.parse(source.read_text(encoding="utf-8"))
    own = "fbi." if package == "fbi" else f"{package}."
    return {alias.asname or alias.name: statement.module
            for statement in _statements(tree)
            if isinstance(statement, ast.ImportFrom) and statement.level == 0
            and statement.module and statement.module.startswith(own)
            for alias in statement.names}


def public_names(package: str) -> list[str]:
    """The public API of ``package``'s face: the names it imports from its own modules
    (`face_imports`) and the functions and classes it defines itself, in source order."""
    face = importlib.import_module(package)
    tree = ast.parse(Path(face.__file__).read_text(encoding="utf-8"))  # type: ignore[arg-type]
    names = list(face_imports(package))
    names += [node.name for node in tree.body
              if isinstance(node, ast.FunctionDef | ast.ClassDef)
              and not node.name.startswith("_")]
    return names


def lazy_face(package: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of a face: ``name`` imported from its private module
    (`face_imports`) on first use, and kept in the face after."""
    def __getattr__(name: str) -> Any:
        module = face_imports(package).get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # found once
        return value

    return __getattr__


class _VerbPackage(types.ModuleType):
    """A package that is also its library verb: ``fbi.gate(...)`` calls ``fbi.gate.gate``
    (see `verb_package`)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, self.__name__.rsplit(".", 1)[1])(*args, **kwargs)


def verb_package(name: str) -> None:
    """Make the package ``name`` (``fbi.gate``) callable as the function of its own name
    that it exports (``fbi.gate.gate``): the library verbs ``fbi.gate``, ``fbi.watch``,
    ``fbi.hunt``, ``fbi.trust`` and ``fbi.report`` are their packages, since a function
    ``fbi.gate`` beside a package of that name would be replaced by the package the
    moment anything imported it. Called at the end of the package's ``__init__``."""
    sys.modules[name].__class__ = _VerbPackage
