"""Report sections as data: a table of the report is declared once — its title, its note,
when it is present, its rows — and drawn by every renderer alike: the terminal
(`fbi.report._terminal`), ``report.md`` (`fbi.report._markdown`) and ``report.html`` (one
macro in ``fbi/data/report.html.jinja``).

fbi's own sections, in the order the report shows them, are declared in
`fbi.report._contents` (the ``fbi.sections`` entry point of fbi's pyproject.toml, read
when `SECTIONS` — a [`Registry`][fbi.registry.Registry] — is first asked); a new table is
its rows' function and one [`Section`][fbi.report.Section] there, or, from outside fbi, one
[`register_section`][fbi.report.register_section] call or a plug-in package's entry point
(docs/examples/ has one, tested), placed last or before a section it names.
What a section shows comes from the [`Summary`][fbi.report.Summary], whose figures
``summary.json`` holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fbi.registry import Registry

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
    before: str | None = None
    """Shown before the section of this key (None: after fbi's own, in order)."""


#: Every section by its key (see the module docstring).
SECTIONS: Registry[Section] = Registry("report section", "fbi.sections")


def register_section(section: Section, before: str | None = None) -> Section:
    """Add ``section`` to the report: last, or ``before`` the section of that key. A
    section of the same key replaces it (a module loaded again)."""
    if before is not None:
        section = dataclasses.replace(section, before=before)
        if before not in SECTIONS:
            raise ValueError(f"no report section {before!r}: there are "
                             f"{', '.join(SECTIONS.names())}")
    SECTIONS.remove(section.key)
    return SECTIONS.add(section.key, section)


def sections() -> list[Section]:
    """Every section, in the order the report shows them: fbi's own as declared, each
    other placed before the section it names, or last."""
    placed = [s for s in SECTIONS.values() if s.before is None]
    for section in (s for s in SECTIONS.values() if s.before is not None):
        keys = [s.key for s in placed]
        placed.insert(keys.index(section.before) if section.before in keys else len(placed),
                      section)
    return placed


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
