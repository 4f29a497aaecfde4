"""Judges under manipulation: does text added to an answer make the judge miss an error it
had caught? (issue 24; the manipulations are made by `fbi.perturb._manipulate`.)

Each manipulated instance is paired with its twin — the same perturbed answer without
the added text — under the same judge and strategy, when the twin was judged readably.
A manipulated instance whose reply the manipulation made unparseable counts as a miss
(issue 38): text that leaves the judge unable to state a verdict has swayed it as surely
as text that makes it pass the error, and leaving such pairs out under-reported a swayed
judge (fake verdicts planted in the answer made replies that repeat them unreadable).
``unparseable_after`` says how many misses were such replies. Per judge × strategy ×
kind of manipulation: how many errors the judge caught in the twins, how many of those
it missed once manipulated, how many it caught only once manipulated, and the exact
McNemar test on those two discordant counts (as
``statsmodels.stats.contingency_tables.mcnemar(exact=True)``): a small p says the text
changed the judge's verdicts more in one direction than chance would.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from fbi.metrics._compare import mcnemar_exact_p
from fbi.metrics._outcomes import InstanceOutcome
from fbi.metrics._results import ManipulationRow
from fbi.taxonomy import strategy_order

READABLE = ("detected", "undetected")
#: A manipulated instance's outcomes that count: readable, or made unreadable (a miss).
AFTER = (*READABLE, "unparseable")


def manipulation_effects(outcomes: Iterable[InstanceOutcome],
                         twin_of: Mapping[str, str]) -> list[ManipulationRow]:
    """One row per judge × strategy × manipulation kind: ``pairs`` (the twin judged
    readably, the manipulated instance judged at all), ``caught_before`` (twin
    detected), ``missed_after`` (of those, missed once manipulated, an unparseable reply
    included), ``unparseable_after`` (manipulated replies that were unparseable, each
    counted as a miss), ``caught_after_only``, ``missed_before_rate`` and
    ``missed_after_rate`` (undetected shares of twins and of manipulated, over the
    pairs), ``p`` (exact McNemar). ``twin_of``: manipulated instance id → its twin's id."""
    by_key: dict[tuple[str, str, str], InstanceOutcome] = {}
    manipulated = []
    for outcome in outcomes:
        if outcome.instance_id in twin_of:
            if outcome.outcome in AFTER:
                manipulated.append(outcome)
        elif outcome.outcome in READABLE:
            by_key[(outcome.judge, outcome.strategy, outcome.instance_id)] = outcome
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for outcome in manipulated:
        twin = by_key.get((outcome.judge, outcome.strategy, twin_of[outcome.instance_id]))
        if twin is None:
            continue
        cell = counts[(outcome.judge, outcome.strategy, outcome.category)]
        before, after = twin.outcome == "detected", outcome.outcome == "detected"
        cell[0] += 1  # pairs
        cell[1] += before
        cell[2] += before and not after
        cell[3] += after and not before
        cell[4] += outcome.outcome == "unparseable"
    order = strategy_order({strategy for _, strategy, _ in counts})
    rows = []
    for (judge, strategy, category), (pairs, caught, missed, gained, unreadable) in sorted(
            counts.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]), kv[0][2])):
        rows.append(ManipulationRow(
            judge=judge, strategy=strategy,
            manipulation=category.removeprefix("manipulation/"), pairs=pairs,
            caught_before=caught, missed_after=missed, caught_after_only=gained,
            unparseable_after=unreadable,
            missed_before_rate=(pairs - caught) / pairs,
            missed_after_rate=(pairs - caught + missed - gained) / pairs,
            p=mcnemar_exact_p(missed, gained)))
    return rows
