"""The report's table of agents' errors by TRAIL's taxonomy (`fbi.metrics.trail_rates`;
issue 66), beside fbi's own categories."""

from __future__ import annotations

from fbi.report._cells import percent_with_interval
from fbi.report._schema import Summary
from fbi.taxonomy import CATEGORIES, TRAIL_CLASSES

TRAIL_NOTE = (
    "The trajectory categories filed under TRAIL's three classes of agent errors "
    "(Deshpande et al. 2025, §3: reasoning; planning and coordination; system execution) "
    "— " + "; ".join(f"{name}: " + ", ".join(c.name.removeprefix("trajectory/")
                                            for c in CATEGORIES if c.trail == name)
                     for name in TRAIL_CLASSES)
    + " — and the share of each class's planted errors the judge missed, with 95% "
    "Wilson intervals; the per-category tables give fbi's own taxonomy.")


def trail_table(summary: Summary, terminal: bool = False
                ) -> tuple[list[str], list[list[str]]]:
    """One row per judge × strategy × TRAIL class."""
    names = summary.display_names
    header = ["judge", "strategy", "TRAIL class", "n", "missed", "% undetected [95% CI]"] + \
        ([] if terminal else ["unparseable"])
    rows = []
    for row in summary.trail:
        shown = percent_with_interval(row.rate, row.ci_low, row.ci_high)
        rows.append([row.judge, names.get(row.strategy, row.strategy), row.group,
                     str(row.judged), str(row.undetected), shown]
                    + ([] if terminal else [str(row.unparseable)]))
    return header, rows
