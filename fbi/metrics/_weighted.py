"""The undetected rate under the probability-weighted score (``fbi evaluate --logprobs``)
beside the rate under the sampled score, on the same instances.

G-Eval (Liu et al., 2023, §2.3) replaces the sampled score by its expectation over the
score tokens' probabilities, so scores become fine-grained and ties rare. The FBI
outcome rules (paper §4) are applied to the expected scores unchanged:

* single-answer: detected iff E[score(perturbed)] < E[score(gold)]; an exact tie counts as
  undetected, as it does for sampled scores;
* reference-guided: undetected iff the perturbed answer's expected score rounds to the
  top of the range (E ≥ top − ½): fbi's reading of "gets the top score" for a
  fractional score; the paper has no weighted variant.
* score-invariant edits are retained iff not penalised by the same rules.

Both scores go through the one rule, `fbi.metrics._outcomes.penalised`.

An instance counts only when every call it needs has an expected score (the provider
returned log-probabilities and the score was read from the first reply); the others are
counted in ``without_weights``. Pairwise strategies have no score and no row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from fbi.metrics._outcomes import penalised
from fbi.metrics._rates import wilson_interval
from fbi.metrics._results import WeightedRow
from fbi.records import Judgment
from fbi.taxonomy import SCORE_INVARIANT, get_category, strategy_order

_NEEDED = {"single": ("gold", "perturbed"), "reference": ("perturbed",)}


def weighted_rates(judgments: Iterable[Judgment]) -> list[WeightedRow]:
    """Per judge × strategy with any expected score: the sampled and the expected-score
    undetected rates (with Wilson intervals), ties under each, and SI retained."""
    calls: dict[tuple[str, str, str], dict[str, Judgment]] = defaultdict(dict)
    for judgment in judgments:
        if judgment.paradigm in _NEEDED and judgment.status == "ok":
            calls[(judgment.judge, judgment.strategy, judgment.instance_id)][
                judgment.role] = judgment
    tallies: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    weighted_any: set[tuple[str, str]] = set()
    for (judge, strategy, _), roles in calls.items():
        any_call = next(iter(roles.values()))
        if any(role not in roles for role in _NEEDED[any_call.paradigm]) or \
                get_category(any_call.category).extra:
            continue
        tally = tallies[(judge, strategy)]
        if any(roles[r].expected_score is None for r in _NEEDED[any_call.paradigm]):
            tally["without_weights"] += 1
            continue
        weighted_any.add((judge, strategy))
        sampled, expected, sampled_tie, expected_tie = _penalised(roles, any_call.paradigm)
        group = "si" if any_call.category == SCORE_INVARIANT else "errors"
        tally[f"{group}"] += 1
        tally[f"{group}_sampled_kept"] += not sampled  # undetected, or retained
        tally[f"{group}_expected_kept"] += not expected
        tally[f"{group}_sampled_ties"] += sampled_tie
        tally[f"{group}_expected_ties"] += expected_tie
    order = strategy_order({strategy for _, strategy in weighted_any})
    rows = []
    for judge, strategy in sorted(weighted_any, key=lambda k: (k[0], order.index(k[1]))):
        tally = tallies[(judge, strategy)]
        row: dict = {"judge": judge, "strategy": strategy, "instances": tally["errors"],
                     "si_instances": tally["si"],
                     "without_weights": tally["without_weights"]}
        for kind in ("sampled", "expected"):
            kept, n = tally[f"errors_{kind}_kept"], tally["errors"]
            interval = wilson_interval(kept, n)
            row[f"{kind}_rate"] = kept / n if n else None
            row[f"{kind}_ci_low"], row[f"{kind}_ci_high"] = interval or (None, None)
            row[f"{kind}_ties"] = tally[f"errors_{kind}_ties"] + tally[f"si_{kind}_ties"]
            row[f"{kind}_si_retained"] = (tally[f"si_{kind}_kept"] / tally["si"]
                                          if tally["si"] else None)
        rows.append(WeightedRow(**row))
    return rows


def _penalised(roles: dict[str, Judgment], paradigm: str) -> tuple[bool, bool, bool, bool]:
    """(penalised under the sampled score, under the expected score, tie sampled, tie
    expected) for one instance, by the one rule `penalised`."""
    perturbed = roles["perturbed"]
    top = perturbed.score_range[1]  # type: ignore[index]
    gold = roles.get("gold")
    verdicts = []
    for field in ("score", "expected_score"):
        mine, theirs = getattr(perturbed, field), gold and getattr(gold, field)
        verdicts.append(penalised(paradigm, mine, theirs, top))
    ties = [gold is not None and getattr(perturbed, f) == getattr(gold, f)
            for f in ("score", "expected_score")]
    return verdicts[0], verdicts[1], ties[0], ties[1]
