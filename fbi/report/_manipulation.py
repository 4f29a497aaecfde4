"""The report's table of judges under manipulation (`fbi.metrics._manipulation`)."""

from __future__ import annotations

from fbi.report._schema import Summary
from fbi.report._verdict import format_p

MANIPULATION_NOTE = (
    "Each manipulated instance beside its twin (the same perturbed answer without the "
    "added text), under the same judge and strategy, where the twin was judged readably: "
    "errors the judge caught in the twins, how many of those it missed once manipulated "
    "(a reply the manipulation made unparseable counts as a miss: \"unparseable\" says "
    "how many), how many it caught only once manipulated, the % undetected before → "
    "after, and the exact McNemar p on the two discordant counts.")


def manipulation_table(summary: Summary, terminal: bool = False
                       ) -> tuple[list[str], list[list[str]]]:
    """One row per judge × strategy × manipulation (a terminal's: fewer columns)."""
    names = summary.display_names
    if terminal:  # 80 columns: the counts the test reads; the rest is in the md and html
        header = ["judge", "strategy", "manipulation", "caught", "then missed", "p"]
    else:
        header = ["judge", "strategy", "manipulation", "pairs", "caught before",
                  "then missed", "unparseable", "caught only after",
                  "% undetected before → after", "p (exact McNemar)"]
    rows = []
    for row in summary.manipulation:
        sides = [row.judge, names.get(row.strategy, row.strategy),
                 row.manipulation]
        if terminal:
            rows.append([*sides, str(row.caught_before), str(row.missed_after),
                         format_p(row.p)])
            continue
        rows.append([*sides, str(row.pairs), str(row.caught_before),
                     str(row.missed_after), str(row.unparseable_after),
                     str(row.caught_after_only),
                     f"{100 * row.missed_before_rate:.1f} → "
                     f"{100 * row.missed_after_rate:.1f}", format_p(row.p)])
    return header, rows
