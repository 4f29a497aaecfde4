"""Which instances a person labels, and in which order (`fbi label`): an order whose every
prefix the trust statistics may use as it is, with no weights — wherever a person stops.

Two rules, both seeded:

* ``uniform`` — a random permutation of the runs' instances: any prefix is a simple
  random sample without replacement.
* ``stratified`` (the default) — strata are the category crossed with the judge's
  confidence band (the quartile of its confidence, where the runs carry a confidence
  signal: samples, log-probabilities or several judges) or, without one, with the
  judge's verdict. Inside each stratum, systematic sampling from a random start (Cochran
  1977, *Sampling Techniques*, §8.1): item j of stratum h (0-based, in a random order)
  gets the key ``(j + U_h) / N_h``, ``U_h`` uniform on [0, 1), and the order is by key.
  Items up to a key τ hold ``τ N_h`` of stratum h on average and within one item always:
  proportional allocation, so each item's chance of being in the prefix is τ, the same
  for every stratum. The labelled share is then the stratified estimator itself
  (self-weighting), unbiased without weights, with the variance of proportional
  allocation — never above a simple random sample's, lower where the strata differ.

**Why not active sampling** (the items that most narrow the interval, weighted by the
inverse of their chance of being shown: Zrnic and Candès 2024, "Active Statistical
Inference"): its estimates are unbiased only with those weights, and `fbi trust`'s
certificate — Learn-then-Test's fixed-sequence binomial test — assumes exchangeable
labelled items; weighted labels would void its guarantee. A self-weighting order keeps
every figure `fbi trust` and `fbi report --human` compute valid as they are.
"""

from __future__ import annotations

import bisect
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fbi.errors import InputError
from fbi.metrics import judge_verdict, judgments_by_instance
from fbi.runs import Run
from fbi.trust._items import confidence_kind, jury_items, run_items

PlanRule = Literal["stratified", "uniform"]
#: The rules `fbi label --plan` takes.
PLAN_RULES: tuple[str, ...] = ("stratified", "uniform")


@dataclass(frozen=True)
class LabelPlan:
    """The order in which instances are shown, and why."""

    order: list[str]
    """Instance ids, first shown first."""
    strata: dict[str, str]
    """Instance id → its stratum (empty for ``uniform``)."""
    rule: str
    """The rule, in one sentence."""


def systematic_order(strata: dict[str, str], seed: int) -> list[str]:
    """Instance ids ordered by their systematic-sampling keys (module docstring)."""
    rng = random.Random(f"label-plan:{seed}")
    members: dict[str, list[str]] = defaultdict(list)
    for instance_id in sorted(strata):
        members[strata[instance_id]].append(instance_id)
    keyed = []
    for stratum in sorted(members):
        ids = members[stratum]
        rng.shuffle(ids)
        start = rng.random()
        keyed += [((j + start) / len(ids), rng.random(), i) for j, i in enumerate(ids)]
    return [i for _, _, i in sorted(keyed)]


def label_plan(runs: Sequence[Run], rule: PlanRule = "stratified", seed: int = 0
               ) -> LabelPlan:
    """The order `fbi label` shows the runs' instances in (module docstring)."""
    instances = sorted({i for run in runs for i in run.instances})
    if not instances:
        raise InputError("the runs hold no instance to label. Fix: give judge runs that "
                         "`fbi evaluate` finished")
    if rule == "uniform":
        order = list(instances)
        random.Random(f"label-plan:{seed}").shuffle(order)
        return LabelPlan(order, {}, "a random order: any prefix is a simple random sample")
    categories = {i: inst.category for run in runs for i, inst in run.instances.items()}
    bands, signal = _bands(runs)
    strata = {i: f"{categories[i]} · {bands.get(i, 'no verdict')}" for i in instances}
    return LabelPlan(
        systematic_order(strata, seed), strata,
        f"stratified by category and the judge's {signal} ({len(set(strata.values()))} "
        "strata), proportional at every prefix: the labelled items weigh alike")


def _bands(runs: Sequence[Run]) -> tuple[dict[str, str], str]:
    """Instance → the judge's confidence quartile (or, without a confidence signal, its
    verdict) under the first strategy of the first run."""
    strategy = next(iter(runs[0].spec.prompts), None) if runs[0].spec else None
    if strategy is None:
        return {}, "verdict"
    try:
        kind = confidence_kind(runs, "auto")
    except InputError:  # no confidence signal: the judge's verdict stands in
        verdicts = {}
        for (_, _, instance_id), roles in judgments_by_instance(
                j for j in runs[0].judgments if j.strategy == strategy).items():
            verdicts[instance_id] = f"verdict {judge_verdict(roles) or 'unreadable'}"
        return verdicts, "verdict"
    items = jury_items(runs, strategy, {}) if kind == "jury" else \
        run_items(runs[0], strategy, kind, {})
    ranked = sorted(item.confidence for item in items)
    # the quartiles' cut points; equal confidences always share a band
    cuts = sorted({ranked[len(ranked) * q // 4] for q in (1, 2, 3)}) if ranked else []
    return ({item.key[0]: f"confidence band {1 + bisect.bisect_right(cuts, item.confidence)}"
             for item in items}, "confidence quartile")
