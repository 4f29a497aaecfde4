"""Row layouts: the shapes of row fbi reads, each one object behind one registry.

A container (a file, a folder, a Hub dataset: `fbi.datasets._containers`) yields
[`RawRow`][fbi.datasets.RawRow]s with their file and line; the first
[`RowLayout`][fbi.datasets.RowLayout] that recognises a row's columns turns it into fbi's
fields, one dict an instance (a best-of-N row is many), or refuses it with a
[`RowProblem`][fbi.datasets.RowProblem] (a message and what to do: the file and line are
added where it is reported); `fbi.datasets._instances` checks those fields and makes the
instances. Reading goes one way down: container → layout → instance.

fbi's own layouts — an MT-Bench question (refused: it holds no answer), LLMBar, RewardBench
2's best-of-N rows, a preference pair (RewardBench, HH-RLHF, UltraFeedback), and fbi's own
columns (the FBI release's names, conversations in ``messages``), asked last — are the
``fbi.layouts`` entry points of fbi's pyproject.toml, imported when `LAYOUTS` (a
[`Registry`][fbi.registry.Registry]) is first read. A new layout is one class registered
with [`register_layout`][fbi.datasets.register_layout] (docs/examples/ has one, tested),
or a plug-in package's entry point: other packages' layouts are asked first, then fbi's
own, the last declared first.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from fbi.errors import Problem
from fbi.registry import Registry


@dataclass(frozen=True)
class RawRow:
    """One row as read from a source, before validation."""

    file: str
    """Where it was read (a path, ``sample``, ``hf:ORG/NAME split``)."""
    location: str
    """Where in it: ``line 12``, ``row 3``, ``item 4``."""
    data: dict[str, Any]
    """Its columns, as read."""
    defaults: dict[str, Any] = field(default_factory=dict)
    """Values the container implies (an FBI TSV file's category, an LLMBar file's subset)."""
    typed: bool = True
    """Its values keep their kinds (JSON, Parquet): a number is a number, and text where
    a number belongs is refused. False for CSV and TSV rows, where every value is text
    (`whole_number`)."""


def whole_number(value: Any, name: str, typed: bool = True) -> int | None:
    """A column that holds a whole number (a seed, a count, an MT-Bench question id):
    None when empty. In a typed row (JSON, Parquet) only an integer — never ``"3"``,
    ``3.0`` or ``true``; in a text row (CSV, TSV) ASCII digits with an optional sign
    (never ``"1_000"`` or ``"٣"``, which Python's ``int`` would read). RowProblem else."""
    if value is None or value == "":
        return None
    if typed and isinstance(value, int) and not isinstance(value, bool):
        return value
    if not typed and isinstance(value, str) and _ASCII_INTEGER.fullmatch(value.strip()):
        return int(value.strip())
    shown = repr(value)[:40]
    raise RowProblem(f"'{name}' must be a whole number, not {shown}" +
                     (" (text)" if typed and isinstance(value, str) else ""),
                     f"write {name} as an integer" + (", without quotes" if typed else ""))


_ASCII_INTEGER = re.compile(r"[+-]?[0-9]{1,19}")


class RowProblem(Exception):
    """A row a layout cannot read: what is wrong and what to do (``whole_file``: said once
    for a file with a header, as a missing column is)."""

    def __init__(self, message: str, fix: str = "", whole_file: bool = False):
        super().__init__(message)
        self.message, self.fix, self.whole_file = message, fix, whole_file


class RowLayout(ABC):
    """One shape of row (see the module docstring)."""

    name: ClassVar[str]
    """The layout's name, as ``fbi datasets check`` says it."""
    precedence: ClassVar[int] = 100
    """Layouts of higher precedence are offered a row first (a layout of your own: 100,
    before all of fbi's; among equals, the last registered first). fbi's own are 0–40:
    its own columns last, preference pairs before them, best-of-N rows (whose lists a
    preference layout would misread) before those."""

    @abstractmethod
    def detect(self, data: dict[str, Any]) -> bool:
        """Whether a row's columns are of this layout."""

    @abstractmethod
    def rows(self, row: RawRow) -> list[dict[str, Any]]:
        """The row in fbi's fields (`fbi.records.Instance`'s, or the FBI release's
        names), one dict an instance; a RowProblem when it cannot be read."""


#: Every row layout by name (see the module docstring).
LAYOUTS: Registry[RowLayout] = Registry("row layout", "fbi.layouts")
_asked: tuple[int, list[RowLayout]] | None = None  # (LAYOUTS.version, the asking order)


def register_layout(layout: type[RowLayout]) -> type[RowLayout]:
    """Register a row layout (a class decorator). The same class registered again
    replaces itself."""
    LAYOUTS.add(layout.name, layout())
    return layout


def layouts() -> list[RowLayout]:
    """Every registered layout, in the order rows are offered to them: by precedence,
    highest first (yours before fbi's own), among equals the last registered first —
    worked out once per change of the registry."""
    global _asked
    LAYOUTS.load()
    if _asked is None or _asked[0] != LAYOUTS.version:
        latest_first = list(LAYOUTS.values())[::-1]
        _asked = (LAYOUTS.version, sorted(latest_first, key=lambda layout: -layout.precedence))
    return list(_asked[1])


def layout_of(data: dict[str, Any]) -> RowLayout:
    """The layout that reads a row of these columns (fbi's own columns if no other)."""
    asked = _asked[1] if _asked is not None and _asked[0] == LAYOUTS.version else layouts()
    return next(layout for layout in asked if layout.detect(data))


def readable_rows(rows: Iterable[RawRow], problems: list[Problem]) -> Iterator[RawRow]:
    """The rows a container could parse; each it could not (a bad JSON line) is added to
    ``problems`` with its file and line instead."""
    for row in rows:
        if "__error__" in row.data:
            message, fix = row.data["__error__"]
            problems.append(Problem(row.file, row.location, message, fix))
        else:
            yield row
