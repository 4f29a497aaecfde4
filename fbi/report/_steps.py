"""The report's table of step-level judges of agents (`fbi.metrics.step_localisation`)."""

from __future__ import annotations

from fbi.report._schema import Summary

STEPS_NOTE = (
    "A step-level strategy asks the judge for the first wrong step of each perturbed "
    "trajectory. Of the readable replies: the step the error was planted in named "
    "(exact), an earlier one (a correct step called wrong), a later one (the error passed "
    "over, a later symptom named), or none (the error missed: the category's undetected "
    "rate).")


def steps_table(summary: Summary) -> tuple[list[str], list[list[str]]] | None:
    """One row per judge × strategy × category."""
    if not summary.steps:
        return None
    names = summary.display_names
    rows = [[row.judge, names.get(row.strategy, row.strategy),
             row.category.removeprefix("trajectory/"), str(row.judged),
             f"{100 * (row.exact_share or 0):.1f}", str(row.early), str(row.late),
             str(row.missed)] for row in summary.steps]
    return ["judge", "strategy", "category", "judged", "% exact", "early", "late",
            "missed"], rows
