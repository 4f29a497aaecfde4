"""Repeatability: the same calls asked K times (``fbi evaluate --samples K``) — how much
a judge's verdicts move when nothing but chance changes.

Per judge × strategy, over the instances with a readable outcome in every sample:

* ``changed_share`` — the share of instances whose outcome (detected or not; for
  score-invariant edits, penalised or not) differs between samples;
* ``fleiss_kappa`` — agreement of the samples as raters over those outcomes (1 when no
  outcome ever changes; as ``statsmodels``' ``fleiss_kappa`` computes it);
* the undetected rate of each sample (error categories only), with their mean, minimum
  and maximum: the spread a single run hides.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from fbi.metrics._agreement import fleiss_kappa
from fbi.metrics._outcomes import instance_outcomes
from fbi.metrics._results import RepeatabilityRow
from fbi.records import Judgment
from fbi.taxonomy import get_category

_BAD = ("detected", "penalised")  # the judge saw the change as a flaw


def repeatability(judgments: Iterable[Judgment]) -> list[RepeatabilityRow]:
    """One row per judge × strategy that has more than one sample."""
    by_sample: dict[int, list[Judgment]] = defaultdict(list)
    for judgment in judgments:
        by_sample[judgment.sample].append(judgment)
    if len(by_sample) < 2:
        return []
    outcomes: dict[tuple[str, str], dict[str, dict[int, str]]] = defaultdict(
        lambda: defaultdict(dict))
    for sample, records in by_sample.items():
        for outcome in instance_outcomes(records):
            if get_category(outcome.category).extra:
                continue
            outcomes[(outcome.judge, outcome.strategy)][outcome.instance_id][sample] = \
                outcome.outcome
    rows: list[RepeatabilityRow] = []
    samples = sorted(by_sample)
    for (judge, strategy), per_instance in sorted(outcomes.items()):
        complete = {i: s for i, s in per_instance.items()
                    if len(s) == len(samples) and "unparseable" not in s.values()}
        if not complete:
            continue
        flaws = [[s[k] in _BAD for k in samples] for s in complete.values()]
        table = np.array([[sum(f), len(f) - sum(f)] for f in flaws])
        rates = []
        for k in samples:
            errors = [s[k] for s in complete.values() if s[k] in ("detected", "undetected")]
            rates.append(sum(o == "undetected" for o in errors) / len(errors)
                         if errors else None)
        known = [r for r in rates if r is not None]
        rows.append(RepeatabilityRow(
            judge=judge, strategy=strategy, samples=len(samples), instances=len(complete),
            changed_share=sum(len(set(f)) > 1 for f in flaws) / len(flaws),
            fleiss_kappa=fleiss_kappa(table), sample_rates=rates,
            rate_mean=sum(known) / len(known) if known else None,
            rate_min=min(known) if known else None,
            rate_max=max(known) if known else None))
    return rows
