"""A new report section, whole: how far unreadable verdicts could move each judge's rate.

fbi leaves an unreadable verdict out of a rate and counts it; this table puts, beside
each judge × strategy, how many verdicts were unreadable and the overall undetected rate
next to its worst case (every unreadable one counted as a miss). Registered here, it is
drawn by the terminal, report.md and report.html alike.

This file is the example of docs/contributing.md, and it runs: tests/test_report.py
reports a run with unreadable replies with it.
"""

from __future__ import annotations

from fbi.report import Section, Summary, Table, register_section


def unreadable_tables(summary: Summary, terminal: bool) -> list[Table]:
    """One row per judge × strategy with any judgment; none: the section is absent."""
    names = summary.display_names
    rows = [[r.judge, names.get(r.strategy, r.strategy), str(r.n), str(r.unparseable),
             f"{100 * r.unparseable / r.n:.1f}",
             "–" if r.rate is None else f"{100 * r.rate:.1f} → {100 * r.worst_case_rate:.1f}"]
            for r in summary.rates if r.level == "overall" and r.n]
    header = ["judge", "strategy", "judged", "unreadable", "% unreadable",
              "% undetected → worst"]
    return [Table(header, rows)] if rows else []


UNREADABLE = register_section(Section(
    key="unreadable", title="Unreadable verdicts: how far they could move the rate",
    contents="Unreadable verdicts", tables=unreadable_tables,
    note="Instances whose verdict could not be read are left out of the rates; the "
         "worst case counts each of them as a missed error."), before="leaderboard")
