"""The headline `fbi evaluate` ends with: strategies × LF/F/IF/R (% undetected) and SI
(% retained), as in paper Table 3, from a run's verdicts alone (no summary is built).

A renderer-neutral table: the CLI draws it with rich. Fits 80 columns with all eleven
strategies: each column's header carries its instance count, and a cell shows its own n
only when fewer of its verdicts were readable. A strategy with unparseable verdicts gets a
"worst case" row beneath (issue 38): what no unreadable reply can lower.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fbi.metrics import headline, instance_outcomes
from fbi.records import judge_name
from fbi.taxonomy import ability_legend, rate_columns, strategy_order


@dataclass
class Headline:
    """A table as text: title, caption, header and rows."""

    title: str
    """The table's title."""
    caption: str
    """What the numbers mean, under the table."""
    header: list[str]
    """The column names."""
    rows: list[list[str]] = field(default_factory=list)
    """The rows, as text."""


def headline_table(judgments: Iterable, display_names: Mapping[str, str],
                   label: str | None = None) -> Headline:
    """The headline of a run's verdicts ([`fbi.judge.read_verdicts`][fbi.judge.read_verdicts]);
    ``display_names``: strategy → the name the paper prints."""
    rows = headline(instance_outcomes(judgments))
    judges = sorted({judge for judge, _ in rows})
    named = [judge_name(label, judge) for judge in judges]
    present = {column for rates in rows.values() for column in rates}
    # the paper's columns for FBI instances; preference pairs and trajectories beside
    columns = rate_columns(present)
    sizes = {c: max((r[c].n for r in rows.values() if r.get(c) is not None), default=0)
             for c in columns}
    what = "% error, 1 − accuracy (lower is better)" if columns == ("Pref",) else \
        "% undetected errors (lower is better), SI % retained (higher is better)"
    legend = ability_legend(columns)
    unreadable = any(r.unparseable for rates in rows.values() for r in rates.values())
    worst = "; worst case: every unparseable verdict counted against the judge" \
        if unreadable else ""
    table = Headline(
        title=f"{', '.join(named)}: {what}",
        caption=f"{legend}; (n) instances, or readable verdicts where fewer{worst}",
        header=[*(["judge"] if len(judges) > 1 else []), "strategy",
                *(f"{c} ({sizes[c]})" for c in columns), "unparseable"])
    order = strategy_order({strategy for _, strategy in rows})
    for (judge, strategy), rates in sorted(rows.items(), key=lambda item: (
            item[0][0], order.index(item[0][1]))):
        cells = []
        for column in columns:
            rate = rates.get(column)
            if rate is None or rate.rate is None:
                cells.append("–")
            else:
                fewer = f" ({rate.parseable})" if rate.parseable < sizes[column] else ""
                cells.append(f"{100 * rate.rate:.1f}{fewer}")
        unparseable = sum(r.unparseable for r in rates.values())
        lead = [judge] if len(judges) > 1 else []
        table.rows.append([*lead, display_names.get(strategy, strategy), *cells,
                           str(unparseable)])
        if unparseable:  # what no unreadable reply can lower, beside the rate it shrinks
            table.rows.append([*([""] if lead else []), " worst case", *(
                "–" if rates.get(c) is None or rates[c].worst_case_rate is None
                else f"{100 * rates[c].worst_case_rate:.1f}" for c in columns), ""])
    return table
