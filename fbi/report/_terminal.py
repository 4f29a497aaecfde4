"""What `fbi report` and `fbi robustness` print on the terminal, as renderer-neutral
blocks (a sentence, or a table's title, header and rows): the CLI draws them with rich,
80 columns wide; this module decides what is shown."""

from __future__ import annotations

from dataclasses import dataclass, field

from fbi.metrics import RobustnessResults
from fbi.report._markdown import coverage_warning
from fbi.report._robustness import robustness_tables, suite_tables
from fbi.report._schema import RobustnessEntry, Summary
from fbi.report._sections import present
from fbi.report._tables import ability_columns, column_notes, rates_title, table_3
from fbi.report._verdict import VERDICT_LEGEND, verdict_pair_tables, verdict_sentences


@dataclass
class Block:
    """A sentence (``text``) or a table (``title``, ``header``, ``rows``)."""

    text: str = ""
    """A sentence; empty for a table."""
    title: str = ""
    """The table's title."""
    header: list[str] = field(default_factory=list)
    """The table's column names."""
    rows: list[list[str]] = field(default_factory=list)
    """The table's rows, as text."""
    alert: bool = False
    """A sentence that says something failed."""


def report_warnings(summary: Summary) -> list[str]:
    """The summary's problems and its coverage gaps, one warning each."""
    return summary.problems + [coverage_warning(r) for r in summary.coverage]


def terminal_report(summary: Summary) -> list[Block]:
    """The comparison's verdict first, then paper Table 3 per judge, robustness, and the
    sections the terminal prints (`fbi.report._contents`): what fits a terminal."""
    blocks: list[Block] = []
    if summary.comparisons:
        blocks += [Block(text=sentence) for sentence in verdict_sentences(summary)]
        blocks += [Block(title=t, header=h, rows=r) for t, h, r in verdict_pair_tables(summary)]
        blocks.append(Block(text=VERDICT_LEGEND))
    shown = {"paper": "paper's convention", "authors": "authors' script's convention"}.get(
        summary.convention, "[95% interval]")
    columns = ability_columns(summary)
    what = rates_title(columns, shown)
    for judge in sorted({r.judge for r in summary.rates}):
        header, rows = table_3(summary, judge)
        blocks.append(Block(title=f"{judge}: {what}", header=header, rows=rows))
    blocks += [Block(text=note) for note in column_notes(columns)]
    blocks += [Block(title=t, header=h, rows=r) for t, h, r in robustness_tables(summary)]
    for section, tables in present(summary, terminal=True):  # (as declared: _contents)
        blocks += [Block(title=table.title or section.terminal_title or section.title,
                         header=table.header, rows=table.rows) for table in tables]
        if section.terminal_note:
            blocks.append(Block(text=section.note))
        blocks += [Block(text=sentence) for sentence in section.sentences(summary)]
    return blocks


def robustness_blocks(results: RobustnessResults) -> list[Block]:
    """One robustness run's (or answers table's) failed and skipped suites and its
    tables."""
    blocks = [Block(text=f"suite {suite} failed: {reason}", alert=True)
              for suite, reason in results.failed_suites.items()]
    blocks += [Block(text=f"suite {suite} skipped: {reason}")
               for suite, reason in results.skipped_suites.items()]
    entry = RobustnessEntry(**{**dict(results), "folder": "", "model": results.model or "–",
                               "dataset": results.dataset or results.source or "–"})
    blocks += [Block(title=t, header=h, rows=r) for t, h, r in suite_tables([entry])]
    return blocks
