"""One registry for every kind of thing fbi can grow by a file: stages and run kinds,
judge kinds, providers, dataset row layouts, report sections, strategy folders,
perturbation rules, trajectory rules, hunt operators, predicates and places, batch
protocols, commands (after lm-evaluation-harness's ``api/registry.py``).

A [`Registry`][fbi.registry.Registry] maps names to items of one kind. What fills it is
its **entry-point group** (``fbi.stages``, ``fbi.layouts``, …), read once, when the
registry is first asked: an entry whose value is a module (``fbi.judge``) is imported,
and registers what it defines as it loads (a class decorator, a subclass hook, a call of
`add`); an entry ``module:attribute`` is that object itself, registered under the
entry's name, loaded only when asked for (commands). **fbi's own built-ins are entry
points of fbi's distribution**, declared in ``pyproject.toml`` exactly as a plug-in
package declares its own — so a plug-in and a built-in are registered the same way, and
no list of kinds is kept anywhere else. Run from a source checkout that was never
installed (``python -m fbi``), fbi's own entries are read from the checkout's
``pyproject.toml``.

Order: fbi's own items first, by entry name (then the order each module registers them
in), then other packages' by name — by name, not as declared, because an installed
distribution's ``entry_points.txt`` keeps no declared order, and fbi must behave the same
installed and from a checkout. Where an order means something (which row layout is asked
first), the items say it themselves (`fbi.datasets.RowLayout.precedence`). An unknown
name is an [`UnknownName`][fbi.errors.UnknownName] with the closest names; a name
registered twice by different objects is refused (the same object loaded again, as a
module re-imported, replaces itself).
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Generic, TypeVar

from fbi.errors import InputError, UnknownName

T = TypeVar("T")

#: fbi's distribution name (its own entry points are the built-ins).
DISTRIBUTION = "fbi"


@dataclass(frozen=True)
class Entry:
    """One entry point of a registry's group."""

    name: str
    """The entry's name."""
    value: str
    """``module`` (imported; it registers what it defines) or ``module:attribute``."""
    own: bool
    """Declared by fbi itself (a built-in)."""
    rank: int
    """Its place among the group's entries (fbi's own first, as declared)."""


def _origin(item: object) -> tuple[str, str]:
    """Who defined ``item``: its module and qualified name (a class, a function, or an
    instance's class)."""
    source = item if isinstance(item, type) or (callable(item) and hasattr(
        item, "__qualname__")) else type(item)
    return (getattr(source, "__module__", ""), getattr(source, "__qualname__", ""))


_MISSING = object()


class Registry(Mapping[str, T], Generic[T]):
    """Names → items of one kind (see the module docstring), read as a mapping (in the
    registry's order); ``what`` names the kind in messages ("run kind", "row layout")."""

    def __init__(self, what: str, group: str):
        self.what, self.group = what, group
        self._items: dict[str, T] = {}
        self._ranks: dict[str, tuple[int, int]] = {}
        self._lazy: dict[str, Entry] = {}
        self._loaded = False
        self._entries: list[Entry] | None = None
        self._added = 0
        self._order: tuple[int, list[str]] | None = None
        self.version = 0
        """Grows with every change: what a reader cached of the items is stale once it
        has (row layouts, asked once per row, are cached so)."""

    # -- filling it -----------------------------------------------------------------

    def add(self, name: str, item: T) -> T:
        """Register ``item`` under ``name``; returns it (so a class decorator may call
        this). The same object (by module and name) registered again replaces itself;
        another object under a name already taken is a ValueError."""
        known = self._items.get(name)
        if known is not None and _origin(known) != _origin(item):
            raise ValueError(f"two {self.what}s are named {name!r}: "
                             f"{'.'.join(_origin(known))} and {'.'.join(_origin(item))}")
        self._items[name] = item
        self.version += 1
        if name not in self._ranks:
            self._added += 1
            self._ranks[name] = (self._rank_of(name, item), self._added)
        return item

    def _group_entries(self) -> list[Entry]:
        if self._entries is None:
            self._entries = entries(self.group)
        return self._entries

    def _rank_of(self, name: str, item: object) -> int:
        """The place of the entry that defines ``item`` (by its module, or the entry
        that names it), whenever it was imported; past every entry when none does."""
        module = _origin(item)[0]
        for entry in self._group_entries():
            target = entry.value.partition(":")[0]
            if (":" in entry.value and entry.name == name) or module == target or \
                    module.startswith(target + "."):
                return entry.rank
        return (1 << 31) if module.split(".")[0] != DISTRIBUTION else (1 << 29)

    def register(self, name: str) -> Callable[[T], T]:
        """A decorator registering what it decorates under ``name``."""
        return lambda item: self.add(name, item)

    def __setitem__(self, name: str, item: T) -> None:
        self.add(name, item)

    def remove(self, name: str) -> None:
        """Take ``name`` out (a test's plug-in, unloaded)."""
        self._items.pop(name, None)
        self._ranks.pop(name, None)
        self.version += 1

    def load(self) -> None:
        """Read the group's entry points, once (see the module docstring)."""
        if self._loaded:
            return
        self._loaded = True
        for entry in self._group_entries():
            if ":" in entry.value:
                self._lazy.setdefault(entry.name, entry)
                continue
            try:
                importlib.import_module(entry.value)
            except ImportError as error:
                if entry.own:
                    raise
                raise InputError(f"the {self.what} plug-in {entry.name!r} ({entry.value}) "
                                 f"does not import: {error}. Fix: reinstall the package "
                                 "that provides it, or uninstall it") from None

    # -- asking it ------------------------------------------------------------------

    def names(self) -> list[str]:
        """Every name, in the registry's order (fbi's own first)."""
        self.load()
        if self._order is None or self._order[0] != self.version:
            ranks = {**{name: (e.rank, 0) for name, e in self._lazy.items()}, **self._ranks}
            # fbi's own in their modules' order; another package's by name
            self._order = (self.version, sorted({*self._items, *self._lazy}, key=lambda n: (
                ranks[n][0], ranks[n][1] if ranks[n][0] < 1 << 30 else 0, n)))
        return list(self._order[1])

    def get(self, name: str, default: object = _MISSING) -> T:  # type: ignore[override]
        """The item named ``name``; UnknownName naming the closest names when none is (or
        ``default``, when given)."""
        self.load()
        if name not in self._items and name in self._lazy:
            entry = self._lazy[name]
            module, _, attribute = entry.value.partition(":")
            item = importlib.import_module(module)
            for part in attribute.split("."):
                item = getattr(item, part)
            self.add(name, item)  # type: ignore[arg-type]
        if name not in self._items:
            if default is not _MISSING:
                return default  # type: ignore[return-value]
            from fbi.taxonomy import unknown_name_message

            raise UnknownName(unknown_name_message(self.what, name, self.names()))
        return self._items[name]

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._items or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


# ------------------------------------------------------------------ entry points

def entries(group: str) -> list[Entry]:
    """The group's entry points: fbi's own, then every other distribution's, each by
    name. fbi's own are its checkout's ``pyproject.toml``'s when the
    running package sits in a checkout (uninstalled, or installed editable: the file is
    the truth even before a reinstall), else its installed distribution's."""
    own = _checkout_entries(group)
    checkout = own is not None
    others: list[tuple[str, str]] = []
    for point in metadata.entry_points(group=group):
        dist = getattr(point, "dist", None)
        if dist is not None and _normal(dist.metadata["Name"] or "") == DISTRIBUTION:
            if not checkout:
                own = [*(own or []), (point.name, point.value)]
            continue
        others.append((point.name, point.value))
    return [Entry(name, value, True, rank)
            for rank, (name, value) in enumerate(sorted(own or []))] \
        + [Entry(name, value, False, (1 << 30) + rank)
           for rank, (name, value) in enumerate(sorted(others))]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _checkout_entries(group: str) -> list[tuple[str, str]] | None:
    """fbi's own entries of ``group`` as the checkout's pyproject.toml declares them; None
    when the running package is not in a checkout (an installed wheel)."""
    text = _checkout_pyproject()
    if text is None:
        return None
    if sys.version_info >= (3, 11):
        import tomllib

        declared = tomllib.loads(text)
        found = declared.get("project", {}).get("entry-points", {}).get(group, {})
        return list(found.items())
    found, inside = [], False  # (Python 3.10: no tomllib; the table's simple lines)
    for line in text.splitlines():
        header = re.match(r'^\[project\.entry-points\."?([\w.-]+)"?\]\s*$', line)
        if header:
            inside = header.group(1) == group
        elif line.startswith("["):
            inside = False
        elif inside and (pair := re.match(r'^\s*"?([\w.-]+)"?\s*=\s*"([^"]+)"', line)):
            found.append((pair.group(1), pair.group(2)))
    return found


@functools.cache
def _checkout_pyproject() -> str | None:
    """The text of the pyproject.toml of the checkout the running package sits in (None:
    an installed wheel, whose folder holds none)."""
    path = Path(__file__).resolve().parents[1] / "pyproject.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    return text if re.search(r'^name = "fbi"$', text, re.M) else None
