"""Report sections as data: a table of the report is declared once — its title, its note,
when it is present, its rows — and drawn by every renderer alike: the terminal
(`fbi.report._terminal`), ``report.md`` (`fbi.report._markdown`) and ``report.html`` (one
macro in ``fbi/data/report.html.jinja``).

fbi's own sections, in the order the report shows them, are declared in
`fbi.report._contents`; a new table is its rows' function and one
[`Section`][fbi.report.Section] there, or, from outside fbi, one
[`register_section`][fbi.report.register_section] call (docs/examples/ has one, tested).
What a section shows comes from the [`Summary`][fbi.report.Summary], whose figures
``summary.json`` holds.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fbi.report._schema import Summary


@dataclass(frozen=True)
class Table:
    """One table of a section, as text: every renderer escapes its cells."""

    header: list[str]
    """The column names."""
    rows: list[list[str]]
    """The rows."""
    title: str = ""
    """Its own title, when a section holds several tables (a sub-heading)."""


def _no_sentences(summary: Summary) -> list[str]:
    return []


@dataclass(frozen=True)
class Section:
    """One section of the report, declared once (see the module docstring)."""

    key: str
    """Its HTML anchor (``leaderboard``), unique."""
    title: str
    """Its heading."""
    tables: Callable[[Summary, bool], list[Table]]
    """Its tables from a summary; the flag asks for the terminal's (80 columns: fewer
    columns or rows). No table: the section is absent."""
    note: str = ""
    """What its figures are, in a paragraph under the heading."""
    sentences: Callable[[Summary], list[str]] = _no_sentences
    """Plain sentences after its tables (a certificate's)."""
    contents: str = ""
    """Its entry in the HTML page's contents (default: the title)."""
    terminal: bool = True
    """`fbi report` prints it on the terminal too."""
    terminal_title: str = ""
    """Its title on the terminal, when it says more than the heading (default: it)."""
    terminal_note: bool = False
    """The terminal prints the note after its tables."""
    table_prefix: str = ""
    """Before each titled table's title, where Markdown makes each its own heading
    (``Bias: ``)."""
    figure: str = ""
    """The HTML page's figure drawn above the tables (a macro of the page's template)."""


#: The module declaring fbi's own sections, imported when the sections are first read.
BUILT_IN_SECTIONS = "fbi.report._contents"

_sections: list[Section] = []
_loaded = False


def register_section(section: Section, before: str | None = None) -> Section:
    """Add ``section`` to the report: last, or ``before`` the section of that key. A
    section of the same key replaces it (a module loaded again)."""
    if not _loaded:
        sections()  # fbi's own first, so ``before`` finds them
    _sections[:] = [s for s in _sections if s.key != section.key]
    keys = [s.key for s in _sections]
    if before is not None and before not in keys:
        raise ValueError(f"no report section {before!r}: there are {', '.join(keys)}")
    _sections.insert(keys.index(before) if before is not None else len(_sections), section)
    return section


def sections() -> list[Section]:
    """Every section, in the order the report shows them."""
    global _loaded
    if not _loaded:
        _loaded = True
        module = importlib.import_module(BUILT_IN_SECTIONS)
        _sections[:0] = [s for s in module.SECTIONS if s.key not in
                         {other.key for other in _sections}]
    return list(_sections)


def present(summary: Summary, terminal: bool = False) -> list[tuple[Section, list[Table]]]:
    """The sections a summary holds, each with its tables (the terminal's: only the
    sections it prints)."""
    shown = []
    for section in sections():
        if terminal and not section.terminal:
            continue
        tables = section.tables(summary, terminal)
        if tables:
            shown.append((section, tables))
    return shown
