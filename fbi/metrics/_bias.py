"""Bias diagnostics from the benchmark's own ground truth: every perturbed answer is known
to be worse than its gold, so a judge's misses can be split by what should not matter.

* **Length.** The undetected rate by how the perturbed answer's length (in words)
  compares with the gold's: shorter (< 0.9×), about equal (0.9–1.1×), longer (> 1.1×).
  A judge that misses far more errors in longer answers rewards length. It does not
  show *why*: categories differ in how they change length (comprehensiveness removes
  text, do-more adds it), so compare bands within a category before concluding.
* **Position** (pairwise): the share of A/B verdicts that chose the first slot, with a
  Wilson interval, is in the pairwise rows (``first_slot_share``); fbi asks every pair
  in both orders, so the ideal is 0.5.
* **Self-preference.** Where the instances record the model that wrote the gold answer
  (``gold_model``), the undetected rate on gold answers of the judge's own model family
  beside the rest. The family is read from the model name (``openai/gpt-4o`` → ``gpt``)
  — a heuristic; without ``gold_model`` nothing is claimed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import TypeVar

from fbi.metrics._outcomes import InstanceOutcome
from fbi.metrics._rates import wilson_interval
from fbi.metrics._results import BandRate, LengthBiasRow, SelfPreferenceRow
from fbi.records import Instance
from fbi.taxonomy import get_category

#: A row of one slice: a length band or a model family.
Band = TypeVar("Band", bound=BandRate)

LENGTH_BANDS = ((0.9, "shorter"), (1.1, "about equal"), (float("inf"), "longer"))


def model_family(model: str) -> str:
    """``openai/gpt-4o`` → ``gpt``, ``anthropic/claude-3-5-sonnet`` → ``claude``."""
    name = model.rsplit("/", 1)[-1].lower()
    match = re.match(r"[a-z]+", name)
    return match.group(0) if match else name


def length_band(gold: str, perturbed: str) -> str:
    ratio = len(perturbed.split()) / max(1, len(gold.split()))
    return next(label for limit, label in LENGTH_BANDS if ratio < limit)


def _readable_errors(outcomes: Iterable[InstanceOutcome], instances: dict[str, Instance]):
    for outcome in outcomes:
        instance = instances.get(outcome.instance_id)
        if instance is None or outcome.is_score_invariant or \
                get_category(outcome.category).extra:
            continue
        if outcome.outcome in ("detected", "undetected"):
            yield outcome, instance


def _rate_row(model: type[Band], missed: list[bool], **fields) -> Band:
    interval = wilson_interval(sum(missed), len(missed))
    return model(**fields, n=len(missed), undetected=sum(missed),
                 rate=sum(missed) / len(missed) if missed else None,
                 ci_low=interval[0] if interval else None,
                 ci_high=interval[1] if interval else None)


def length_bias(outcomes: Iterable[InstanceOutcome],
                instances: dict[str, Instance]) -> list[LengthBiasRow]:
    """Per judge × strategy × length band: readable error instances, undetected, rate."""
    groups: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    bands: dict[str, str] = {}  # instance id → band: every judge and strategy shares it
    for outcome, instance in _readable_errors(outcomes, instances):
        band = bands.get(instance.id)
        if band is None:
            band = bands[instance.id] = length_band(instance.gold_answer,
                                                    instance.perturbed_answer)
        groups[(outcome.judge, outcome.strategy, band)].append(outcome.outcome == "undetected")
    order = [label for _, label in LENGTH_BANDS]
    return [_rate_row(LengthBiasRow, missed, judge=judge, strategy=strategy, band=band)
            for (judge, strategy, band), missed in
            sorted(groups.items(), key=lambda item: (item[0][:2], order.index(item[0][2])))]


def self_preference(outcomes: Iterable[InstanceOutcome], instances: dict[str, Instance],
                    judge_models: dict[str, str]) -> list[SelfPreferenceRow]:
    """Per judge × strategy, where gold answers name their model: the undetected rate on
    gold answers of the judge's own family (``same_family`` true) and on the rest."""
    groups: dict[tuple[str, str, bool], list[bool]] = defaultdict(list)
    for outcome, instance in _readable_errors(outcomes, instances):
        if not instance.provenance.gold_model:
            continue
        judge_family = model_family(judge_models.get(outcome.judge, outcome.judge))
        same = model_family(instance.provenance.gold_model) == judge_family
        groups[(outcome.judge, outcome.strategy, same)].append(outcome.outcome == "undetected")
    return [_rate_row(SelfPreferenceRow, missed, judge=judge, strategy=strategy,
                      same_family=same,
                      judge_family=model_family(judge_models.get(judge, judge)))
            for (judge, strategy, same), missed in sorted(groups.items())]
