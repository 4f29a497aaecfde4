"""Step-level judging of agents' trajectories (issue 54): where the judge put the error.

A step-level strategy (paradigm ``step``) asks for the first wrong step; its outcome is
detected when any step is named (`fbi.metrics.outcome_of`). Here the named step is set
beside the step the perturbation changed (``provenance.changed_step``): **exact**,
**early** (a correct step called wrong) or **late** (the error passed over) — ProcessBench's
question (Zheng et al. 2024, §3: the earliest erroneous step) asked of trajectories.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from fbi.metrics._outcomes import InstanceOutcome
from fbi.metrics._results import StepRow


def step_localisation(outcomes: Iterable[InstanceOutcome], instances: Mapping[str, object]
                      ) -> list[StepRow]:
    """One row per judge × strategy × category of the step-level outcomes of planted
    errors (score-invariant rewrites and unreadable replies left out)."""
    counts: dict[tuple[str, str, str], dict[str, int]] = defaultdict(
        lambda: dict.fromkeys(("judged", "exact", "early", "late", "missed", "unplaced"), 0))
    for o in outcomes:
        if o.paradigm != "step" or o.is_score_invariant or o.outcome not in (
                "detected", "undetected"):
            continue
        row = counts[(o.judge, o.strategy, o.category)]
        row["judged"] += 1
        provenance = getattr(instances.get(o.instance_id), "provenance", None)
        changed = getattr(provenance, "changed_step", None)
        named = o.perturbed_score or 0
        place = "missed" if not named else "unplaced" if changed is None else \
            "exact" if named == changed else "early" if named < changed else "late"
        row[place] += 1
    return [StepRow(judge=judge, strategy=strategy, category=category, **row,
                    exact_share=row["exact"] / row["judged"])
            for (judge, strategy, category), row in sorted(counts.items())]
