"""Whether two judges really differ: paired tests on the instances both judged.

Two runs (judges, or one judge's two labelled runs) that used the same strategy over the
same instances are compared instance by instance. Per category, ability and overall, the
instances both judged readably form a 2×2 table of detected/undetected; the exact
McNemar test (the two-sided binomial test on the discordant pairs, as
``statsmodels.stats.contingency_tables.mcnemar(exact=True)`` computes it) asks whether
one judge misses errors the other catches more often than the reverse. The family of one
comparison — every group of one pair of runs under one strategy — is corrected with
Holm's step-down method, so a report of 27 groups does not turn up differences by
chance. Score-invariant edits are left out: their outcome (retained or penalised) is not
a miss.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from itertools import combinations

from fbi.metrics._outcomes import InstanceOutcome
from fbi.taxonomy import get_category

SIGNIFICANCE = 0.05


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for discordant counts ``b`` and ``c``."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [0.0] * len(pvalues)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


def paired_comparisons(outcomes: Iterable[InstanceOutcome]) -> list[dict]:
    """Every pair of judges (run labels) under every strategy both ran, per group."""
    readable: dict[tuple[str, str], dict[str, InstanceOutcome]] = defaultdict(dict)
    for outcome in outcomes:
        if outcome.is_score_invariant or get_category(outcome.category).extra:
            continue
        if outcome.outcome in ("detected", "undetected"):
            readable[(outcome.judge, outcome.strategy)][outcome.instance_id] = outcome
    judges = sorted({judge for judge, _ in readable})
    strategies = sorted({strategy for _, strategy in readable})
    rows: list[dict] = []
    for strategy in strategies:
        for judge_a, judge_b in combinations(judges, 2):
            a, b = readable.get((judge_a, strategy)), readable.get((judge_b, strategy))
            if not a or not b:
                continue
            common = sorted(set(a) & set(b))
            if not common:
                continue
            family = [_test(judge_a, judge_b, strategy, level, group,
                            [(a[i].outcome == "undetected", b[i].outcome == "undetected")
                             for i in ids])
                      for level, group, ids in _groups(common, a)]
            for row, adjusted in zip(family, holm([r["p"] for r in family]), strict=True):
                row["p_adjusted"] = adjusted
                row["significant"] = adjusted < SIGNIFICANCE
            rows += family
    return rows


def _groups(ids: list[str], outcomes: dict[str, InstanceOutcome]):
    by_category: dict[str, list[str]] = defaultdict(list)
    by_ability: dict[str, list[str]] = defaultdict(list)
    for instance_id in ids:
        outcome = outcomes[instance_id]
        by_category[outcome.category].append(instance_id)
        by_ability[outcome.ability.short].append(instance_id)
    for category, members in sorted(by_category.items()):
        yield "category", category, members
    for ability, members in sorted(by_ability.items()):
        yield "ability", ability, members
    yield "overall", "all", ids


def _test(judge_a: str, judge_b: str, strategy: str, level: str, group: str,
          pairs: list[tuple[bool, bool]]) -> dict:
    only_a = sum(1 for missed_a, missed_b in pairs if missed_a and not missed_b)
    only_b = sum(1 for missed_a, missed_b in pairs if missed_b and not missed_a)
    return {
        "judge_a": judge_a, "judge_b": judge_b, "strategy": strategy, "level": level,
        "group": group, "n": len(pairs),
        "rate_a": sum(missed for missed, _ in pairs) / len(pairs),
        "rate_b": sum(missed for _, missed in pairs) / len(pairs),
        "missed_by_a_only": only_a, "missed_by_b_only": only_b,
        "p": mcnemar_exact_p(only_a, only_b),
    }
