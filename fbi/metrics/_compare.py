"""Whether two judges really differ: paired tests on the instances both judged.

Two runs (judges, or one judge's two labelled runs) that used the same strategy over the
same instances are compared instance by instance; so are pairs the user names, such as
one judge's Vanilla against its Rules (``fbi report --compare``). Per category, ability
and overall, the instances both judged readably form a 2×2 table of detected/undetected; the exact
McNemar test (the two-sided binomial test on the discordant pairs, as
``statsmodels.stats.contingency_tables.mcnemar(exact=True)`` computes it) asks whether
one judge misses errors the other catches more often than the reverse. The family of one
comparison — every group of one pair of runs under one strategy — is corrected with
Holm's step-down method, so a report of 27 groups does not turn up differences by
chance. Score-invariant edits are left out: their outcome (retained or penalised) is not
a miss.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import combinations

from fbi.metrics._outcomes import InstanceOutcome
from fbi.metrics._results import ComparisonRow
from fbi.taxonomy import get_category

SIGNIFICANCE = 0.05


@lru_cache(maxsize=4096)  # the same discordant counts recur across pairs and groups
def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for discordant counts ``b`` and ``c``: scipy's
    binomial test of b successes in b + c at ½ (the distribution is symmetric, so this
    is statsmodels' doubled smaller tail, capped at 1)."""
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(b, b + c, 0.5).pvalue)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [0.0] * len(pvalues)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


#: One side of a comparison: a run label (judge) and a strategy it ran.
Side = tuple[str, str]


def paired_comparisons(outcomes: Iterable[InstanceOutcome],
                       named: Sequence[tuple[Side, Side]] = ()) -> list[ComparisonRow]:
    """Every pair of judges (run labels) under every strategy both ran, per group; then
    each pair the user named (``((judge, strategy), (judge, strategy))``: two strategies
    of one judge, or two judges under different strategies), each its own Holm family.

    Every row says both sides: ``judge_a``/``strategy`` and ``judge_b``/``strategy_b``
    (equal strategies unless named), and ``named``. Counted with arrays over the
    instances (one column per side), so 20 judges — 190 pairs × 11 strategies × 2,400
    instances — take seconds, not minutes."""
    readable = readable_by_side(outcomes)
    judges = sorted({judge for judge, _ in readable})
    strategies = sorted({strategy for _, strategy in readable})
    rows: list[ComparisonRow] = []
    for strategy in strategies:
        sides = {(judge, strategy): readable[(judge, strategy)] for judge in judges
                 if (judge, strategy) in readable}
        table = MissTable(sides)
        for side_a, side_b in combinations(sides, 2):
            rows += _family(table.tests(side_a, side_b), named=False)
    for side_a, side_b in named:
        # two judges under one strategy are compared above already
        if side_a[1] != side_b[1] and side_a in readable and side_b in readable:
            table = MissTable({side: readable[side] for side in (side_a, side_b)})
            rows += _family(table.tests(side_a, side_b), named=True)
    return rows


def readable_by_side(outcomes: Iterable[InstanceOutcome]
                     ) -> dict[Side, dict[str, InstanceOutcome]]:
    """Each side's (judge, strategy) readable outcomes of planted errors, by instance:
    score-invariant and extra categories left out (their outcome is not a miss)."""
    readable: dict[Side, dict[str, InstanceOutcome]] = defaultdict(dict)
    for outcome in outcomes:
        if outcome.is_score_invariant or get_category(outcome.category).extra:
            continue
        if outcome.outcome in ("detected", "undetected"):
            readable[(outcome.judge, outcome.strategy)][outcome.instance_id] = outcome
    return readable


def _family(family: list[dict], named: bool) -> list[ComparisonRow]:
    """One pair's tests as rows, their p-values Holm-adjusted within the family."""
    return [ComparisonRow(**test, p_adjusted=adjusted, significant=adjusted < SIGNIFICANCE,
                          named=named)
            for test, adjusted in zip(family, holm([t["p"] for t in family]), strict=True)]


class MissTable:
    """Readable outcomes as arrays: instances × sides (judge and strategy), judged or not
    and missed or not, with each instance's category and ability (the groups)."""

    def __init__(self, by_side: dict[Side, dict[str, InstanceOutcome]]):
        import numpy as np

        ids = sorted({i for outcomes in by_side.values() for i in outcomes})
        position = {instance_id: n for n, instance_id in enumerate(ids)}
        self.column = {side: n for n, side in enumerate(by_side)}
        self.judged = np.zeros((len(ids), len(by_side)), dtype=bool)
        self.missed = np.zeros((len(ids), len(by_side)), dtype=bool)
        first: dict[str, InstanceOutcome] = {}
        for side, outcomes in by_side.items():
            rows = np.fromiter((position[i] for i in outcomes), dtype=np.int64,
                               count=len(outcomes))
            self.judged[rows, self.column[side]] = True
            self.missed[rows, self.column[side]] = np.fromiter(
                (o.outcome == "undetected" for o in outcomes.values()), dtype=bool,
                count=len(outcomes))
            for instance_id, outcome in outcomes.items():
                first.setdefault(instance_id, outcome)
        # an instance's category (and so ability) is the same in every run
        self.groups = [("category", sorted({o.category for o in first.values()})),
                       ("ability", sorted({o.ability.short for o in first.values()}))]
        self.codes = [np.array([names.index(first[i].category if level == "category"
                                             else first[i].ability.short) for i in ids],
                               dtype=np.int64) for level, names in self.groups]

    def tests(self, side_a: Side, side_b: Side) -> list[dict]:
        """The family of one pair: each category, each ability, then overall, over the
        instances both judged readably (groups without such an instance are left out)."""
        import numpy as np

        a, b = self.column[side_a], self.column[side_b]
        common = self.judged[:, a] & self.judged[:, b]
        missed_a, missed_b = self.missed[:, a] & common, self.missed[:, b] & common
        counts = (common, missed_a, missed_b, missed_a & ~missed_b, missed_b & ~missed_a)
        family = []
        for (level, names), codes in zip(self.groups, self.codes, strict=True):
            per_group = [np.bincount(codes, weights=c, minlength=len(names)) for c in counts]
            for index, name in enumerate(names):
                if per_group[0][index]:
                    family.append(_test(side_a, side_b, level, name,
                                        *(int(c[index]) for c in per_group)))
        if common.any():
            family.append(_test(side_a, side_b, "overall", "all",
                                *(int(c.sum()) for c in counts)))
        return family


def _test(side_a: Side, side_b: Side, level: str, group: str, n: int,
          missed_a: int, missed_b: int, only_a: int, only_b: int) -> dict:
    return {
        "judge_a": side_a[0], "judge_b": side_b[0], "strategy": side_a[1],
        "strategy_b": side_b[1], "level": level,
        "group": group, "n": n, "missed_a": missed_a, "missed_b": missed_b,
        "rate_a": missed_a / n, "rate_b": missed_b / n,
        "missed_by_a_only": only_a, "missed_by_b_only": only_b,
        "p": mcnemar_exact_p(only_a, only_b),
    }
