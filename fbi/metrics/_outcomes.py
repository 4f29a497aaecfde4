"""Per-instance outcomes from stored judgments (paper §4), and the headline rates.

Pure functions of [`Judgment`][fbi.records.Judgment] records: no model calls, no I/O.

* single-answer: detected iff score(perturbed) < score(gold);
* pairwise, over both slot orders: G (gold preferred both times), P (perturbed both
  times), both-good (tie both times), both-bad (both bad both times), inconsistent
  (anything else); detected iff G;
* reference-guided: undetected iff the perturbed answer gets the top of the range;
* step-level (an agent's trajectory, issue 54): detected iff the judge names a wrong
  step (any step > 0; where, is `fbi.metrics.step_localisation`'s);
* score-invariant instances succeed ("retained") iff the judge does not penalise:
  single score(perturbed) >= score(gold); pairwise not G; reference the top score;
  step-level no step named;
* a missing, unparseable or failed call makes the instance ``unparseable``;
* an instance of the run's dataset with no judgment at all is ``missing``
  ([`missing_outcomes`][fbi.metrics.missing_outcomes]): in no rate, and reported.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from fbi.records import Judgment
from fbi.taxonomy import SCORE_INVARIANT, Ability, get_category

Outcome = Literal["detected", "undetected", "retained", "penalised", "unparseable",
                  "missing"]
PairwiseClass = Literal["G", "P", "both-good", "both-bad", "inconsistent"]


@dataclass(frozen=True, slots=True)  # a report over 20 runs holds half a million
class InstanceOutcome:
    """One instance's outcome under one judge and strategy (paper §5): detected, undetected,
    retained, penalised, unparseable or missing, with the scores or pairwise class
    behind it. A slotted dataclass, not a model: a report over 20 runs makes a million,
    and the summary's rows (`fbi.metrics._results`) are what is written."""

    instance_id: str
    """The instance."""
    judge: str
    """The run's label."""
    strategy: str
    """The strategy."""
    paradigm: str
    """``single``, ``pairwise``, ``reference`` or ``step``."""
    ability: Ability
    """The category's ability."""
    category: str
    """The perturbation category."""
    outcome: Outcome
    """What the judge did with the planted error (or the score-invariant edit)."""
    pairwise_class: PairwiseClass | None = None
    """Pairwise: G, P, both good, both bad or inconsistent over the two orders."""
    perturbed_score: int | None = None
    """Reference-guided: the perturbed answer's score (the top / top−1 / … histogram);
    step-level: the step the judge named (0: none)."""
    score_top: int | None = None
    """Reference-guided: the top of the score range."""
    unreadable_calls: int = 0
    """Unparseable: how many of the instance's calls had no readable verdict (single
    answer: 1 or 2; the FBI authors' script counts a pair with one as half undetected)."""

    @property
    def is_score_invariant(self) -> bool:
        return self.category == SCORE_INVARIANT


def instance_outcomes(judgments: Iterable[Judgment]) -> list[InstanceOutcome]:
    """One outcome per (judge, strategy, instance) found in the judgments."""
    return [outcome_of(roles) for roles in judgments_by_instance(judgments).values()]


def judgments_by_instance(judgments: Iterable[Judgment]
                          ) -> dict[tuple[str, str, str], dict[str, Judgment]]:
    """(judge, strategy, instance id) → role → judgment, in the order first seen."""
    groups: dict[tuple[str, str, str], dict[str, Judgment]] = defaultdict(dict)
    for judgment in judgments:
        groups[(judgment.judge, judgment.strategy, judgment.instance_id)][judgment.role] = \
            judgment
    return groups


def outcome_of(roles: dict[str, Judgment]) -> InstanceOutcome:
    """The outcome of one instance under one judge and strategy, from its judgments by
    role (see the module docstring)."""
    any_judgment = next(iter(roles.values()))
    paradigm = any_judgment.paradigm
    score_invariant = any_judgment.category == SCORE_INVARIANT
    base = {
        "instance_id": any_judgment.instance_id, "judge": any_judgment.judge,
        "strategy": any_judgment.strategy, "paradigm": paradigm,
        "ability": any_judgment.ability, "category": any_judgment.category,
    }
    needed = {"single": ("gold", "perturbed"), "pairwise": ("gold-first", "perturbed-first"),
              "reference": ("perturbed",), "step": ("perturbed",)}[paradigm]
    unreadable = sum(role not in roles or roles[role].status != "ok" for role in needed)
    if unreadable:
        return InstanceOutcome(**base, outcome="unparseable", unreadable_calls=unreadable)

    if paradigm == "single":
        flawed = penalised("single", roles["perturbed"].score, roles["gold"].score)
        return InstanceOutcome(**base, outcome=_label(flawed, score_invariant))

    if paradigm == "pairwise":
        first, second = roles["gold-first"].verdict, roles["perturbed-first"].verdict
        verdict_class = pairwise_class(first, second)
        return InstanceOutcome(**base, outcome=_label(verdict_class == "G", score_invariant),
                               pairwise_class=verdict_class)

    judgment = roles["perturbed"]
    if paradigm == "step":  # the score is the first wrong step the judge names; 0: none
        named = judgment.score
        return InstanceOutcome(**base, outcome=_label(bool(named), score_invariant),
                               perturbed_score=named)
    top = judgment.score_range[1] if judgment.score_range else None
    flawed = top is None or penalised("reference", judgment.score, top=top)
    return InstanceOutcome(**base, outcome=_label(flawed, score_invariant),
                           perturbed_score=judgment.score, score_top=top)


def penalised(paradigm: str, perturbed, gold=None, top: int | None = None) -> bool:
    """The paper's rule (§4) for scores, sampled or expected (fractional, --logprobs):
    single-answer, the perturbed answer scores below the gold (a tie is not a penalty);
    reference-guided, the perturbed answer misses the top of the range — for a fractional
    score, it does not round to the top (E < top − ½), which for whole scores is the
    same as ``score != top``."""
    if paradigm == "single":
        return perturbed < gold
    return perturbed < top - 0.5


def missing_outcomes(outcomes: Iterable[InstanceOutcome], instances: Iterable,
                     judge: str, strategies: Iterable[tuple[str, str]]
                     ) -> list[InstanceOutcome]:
    """An outcome ``missing`` for each instance of the run's dataset that has no
    judgment under a strategy the run judged with (``strategies``: name, paradigm)."""
    seen = {(o.strategy, o.instance_id) for o in outcomes if o.judge == judge}
    return [InstanceOutcome(instance.id, judge, strategy, paradigm, instance.ability,
                            instance.category, "missing")
            for strategy, paradigm in strategies for instance in instances
            if (strategy, instance.id) not in seen]


def pairwise_class(gold_first: str | None, perturbed_first: str | None) -> PairwiseClass:
    """Classify the two mapped verdicts (gold / perturbed / tie / both_bad) of a pair."""
    if gold_first == perturbed_first:
        return {"gold": "G", "perturbed": "P", "tie": "both-good",
                "both_bad": "both-bad"}.get(gold_first or "", "inconsistent")  # type: ignore
    return "inconsistent"


def _label(penalised: bool, score_invariant: bool) -> Outcome:
    if score_invariant:
        return "penalised" if penalised else "retained"
    return "detected" if penalised else "undetected"


@dataclass(frozen=True)
class Rate:
    """Undetected (or, for score-invariant, retained) share of the parseable instances."""

    n: int
    """Instances counted."""
    hits: int
    """Undetected (for score-invariant: retained)."""
    parseable: int
    """With a readable verdict: the rate's denominator."""
    unparseable: int
    """With an unreadable verdict."""
    worst_case_hits: int = 0
    """Hits if every unreadable verdict went wrong: undetected ones plus the unreadable
    (for score-invariant: retained ones alone, the unreadable counted as penalised)."""

    @property
    def rate(self) -> float | None:
        return self.hits / self.parseable if self.parseable else None

    @property
    def worst_case_rate(self) -> float | None:
        """The rate with every unreadable verdict counted against the judge: what no
        reply made unreadable (by a hostile answer, say) can lower."""
        answered = self.parseable + self.unparseable
        return self.worst_case_hits / answered if answered else None


def rate_of(outcomes: Iterable[InstanceOutcome]) -> Rate:
    """The undetected (or, for score-invariant, retained) count over the readable outcomes."""
    outcomes = list(outcomes)
    unparseable = sum(o.outcome == "unparseable" for o in outcomes)
    hits = sum(o.outcome in ("undetected", "retained") for o in outcomes)
    against = sum(o.outcome == "unparseable" and not o.is_score_invariant for o in outcomes)
    return Rate(len(outcomes), hits, len(outcomes) - unparseable, unparseable,
                worst_case_hits=hits + against)


def headline(outcomes: Iterable[InstanceOutcome]) -> dict[tuple[str, str], dict[str, Rate]]:
    """(judge, strategy) → {"LF", "F", "IF", "R": undetected rate; "SI": retained rate}."""
    table: dict[tuple[str, str], dict[str, list[InstanceOutcome]]] = defaultdict(
        lambda: defaultdict(list))
    for outcome in outcomes:
        if get_category(outcome.category).extra:
            continue  # extra categories stay out of the paper's columns
        column = "SI" if outcome.is_score_invariant else outcome.ability.short
        table[(outcome.judge, outcome.strategy)][column].append(outcome)
    return {key: {column: rate_of(items) for column, items in columns.items()}
            for key, columns in table.items()}
