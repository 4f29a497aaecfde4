"""Agreement between a judge and people: the judge's verdicts and scores beside human
labels of the same instances, and the humans' agreement with each other (the ceiling).

A human label names an instance and gives a verdict — ``a`` (the gold answer is better),
``b`` (the perturbed answer is better) or ``tie`` — or a score of one of its answers.
The judge's verdict on an instance under a strategy:

* single-answer: ``a`` when it scored the gold answer higher, ``b`` lower, ``tie`` equal;
* pairwise, over both slot orders: ``a`` for G (gold preferred both times), ``b`` for P,
  ``tie`` otherwise — both good, both bad, and an inconsistent pair, which MT-Bench counts
  as a tie;
* reference-guided strategies show the judge the gold answer as the reference, so they
  give no verdict to compare; their scores are compared.

Agreement follows Zheng et al. 2023 (MT-Bench, §4.2; FastChat's ``compute_agreement``):
every human vote on an instance is compared with the judge's verdict on it; "with ties"
counts them all, "without ties" leaves out each comparison where either side said tie. A
tie agrees with a tie. Human–human agreement compares every pair of human votes on an
instance the same way. Cohen's κ is over the same (judge, human) vote pairs with the three
labels (as ``sklearn.metrics.cohen_kappa_score``). Scores: Spearman's ρ and Kendall's τ-b
between the judge's score of an answer and the people's (their mean when several scored
it), as ``scipy.stats.spearmanr`` and ``kendalltau``.

Intervals: a percentile bootstrap over instances (an instance's votes stay together),
`HUMAN_RESAMPLES` resamples drawn by ``scipy.stats.bootstrap``, seeded; a resample
whose statistic is undefined (no tie-free vote drawn) is left out of the percentiles. Each
resample is handed to the statistics as a row of instance weights (how often each
instance was drawn), so every statistic is a weighted sum over instances,
computed for a block of resamples at once (memory grows with the instances, not with
resamples × instances): the agreement shares and κ from weighted counts, ρ and
τ-b from the weighted table of score pairs (midranks, and concordant and discordant pairs
from the table), which needs scores of at most `MAX_SCORE_VALUES` distinct values a
side (ratings; beyond it the interval is None and ``interval_note`` says why).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np

from fbi.metrics._bootstrap import bootstrap_distribution
from fbi.metrics._outcomes import judgments_by_instance, pairwise_class
from fbi.metrics._results import Agreement, HumanAgreement, JudgeAgreement
from fbi.taxonomy import strategy_order

Verdict = Literal["a", "b", "tie"]
VERDICTS: tuple[Verdict, ...] = ("a", "b", "tie")
HUMAN_RESAMPLES = 1000
MAX_SCORE_VALUES = 50


@dataclass(frozen=True, slots=True)
class HumanLabel:
    """One person's label of one instance: a verdict, or a score of one of its answers."""

    instance_id: str
    """The instance labelled."""
    annotator: str = "human"
    """Who labelled it."""
    verdict: Verdict | None = None
    """A pairwise verdict: gold, perturbed, tie or both_bad."""
    score: float | None = None
    """A score of one of its answers (``answer``)."""
    answer: Literal["gold", "perturbed"] = "perturbed"
    """The answer ``score`` is of."""


@dataclass
class _Item:
    """What one instance contributes to one group's statistics."""

    with_ties: int = 0
    """(judge, human) vote comparisons."""
    agree_with_ties: int = 0
    without_ties: int = 0
    agree_without_ties: int = 0
    confusion: np.ndarray | None = None
    """3 × 3 counts, judge's label × human's."""


def human_agreement(judgments: Iterable, labels: Iterable[HumanLabel],
                    resamples: int = HUMAN_RESAMPLES, seed: int = 0) -> HumanAgreement:
    """A judge row per judge × strategy × group (overall, each ability, each category)
    with any labelled instance: agreement with and without ties, Cohen's κ, and Spearman's
    ρ and Kendall's τ-b against the mean human score, each with its 95% interval. A
    humans row per group: the same agreement between the people (the ceiling)."""
    labels = list(labels)
    votes: dict[str, list[Verdict]] = defaultdict(list)
    scored: dict[tuple[str, str], list[float]] = defaultdict(list)
    for label in labels:
        if label.verdict is not None:
            votes[label.instance_id].append(label.verdict)
        if label.score is not None:
            scored[(label.instance_id, label.answer)].append(label.score)
    rng_seed = np.random.SeedSequence(seed)
    judge_rows, groups_seen = [], {}
    for (judge, strategy, instance_id), roles in judgments_by_instance(judgments).items():
        groups_seen.setdefault((judge, strategy), []).append((instance_id, roles))
    order = strategy_order({strategy for _, strategy in groups_seen})
    for (judge, strategy), items in sorted(groups_seen.items(),
                                           key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
        for level, group, members in _groups(items):
            row = _judge_row(members, votes, scored, resamples, np.random.default_rng(
                rng_seed.spawn(1)[0]))
            if row is not None:
                judge_rows.append(JudgeAgreement(judge=judge, strategy=strategy,
                                                 level=level, group=group, **row))
    human_rows = []
    instances = {instance_id: roles for items in groups_seen.values()
                 for instance_id, roles in items}
    for level, group, members in _groups(list(instances.items())):
        row = _human_row([votes.get(i, []) for i, _ in members], resamples,
                         np.random.default_rng(rng_seed.spawn(1)[0]))
        if row is not None:
            human_rows.append(Agreement(level=level, group=group, **row))
    return HumanAgreement(judge=judge_rows, humans=human_rows)


def _groups(items: list[tuple[str, dict]]):
    """(level, group, members) for overall, each ability and each category."""
    by: dict[tuple[str, str], list] = defaultdict(list)
    for instance_id, roles in items:
        any_judgment = next(iter(roles.values()))
        by[("ability", any_judgment.ability.short)].append((instance_id, roles))
        by[("category", any_judgment.category)].append((instance_id, roles))
    yield "overall", "all", items
    for (level, group), members in sorted(by.items()):
        yield level, group, members


def judge_verdict(roles: dict) -> Verdict | None:
    """The judge's a / b / tie on one instance (see the module docstring); None for a
    reference-guided strategy or an unreadable call."""
    any_judgment = next(iter(roles.values()))
    needed = {"single": ("gold", "perturbed"), "pairwise": ("gold-first", "perturbed-first")}
    roles_needed = needed.get(any_judgment.paradigm)
    if roles_needed is None or any(role not in roles or roles[role].status != "ok"
                                   for role in roles_needed):
        return None
    if any_judgment.paradigm == "single":
        gold, perturbed = roles["gold"].score, roles["perturbed"].score
        return "a" if gold > perturbed else "b" if gold < perturbed else "tie"
    verdict_class = pairwise_class(roles["gold-first"].verdict,
                                   roles["perturbed-first"].verdict)
    return {"G": "a", "P": "b"}.get(verdict_class, "tie")  # type: ignore[return-value]


def _judge_row(members, votes, scored, resamples, rng) -> dict | None:
    items, pairs = [], []  # per instance; (instance index, judge score, human score)
    for instance_id, roles in members:
        verdict = judge_verdict(roles)
        humans = votes.get(instance_id, [])
        item = _compare([verdict] if verdict else [], humans)
        for answer in ("gold", "perturbed"):
            people = scored.get((instance_id, answer))
            judgment = roles.get(answer)
            if people and judgment is not None and judgment.status == "ok" \
                    and judgment.score is not None:
                pairs.append((len(items), float(judgment.score), float(np.mean(people))))
        if item.with_ties or any(p[0] == len(items) for p in pairs[-2:]):
            items.append(item)
    if not items:
        return None
    weights = _Resamples(len(items), resamples, rng)
    row = _agreement_fields(items, weights)
    confusion = np.stack([i.confusion for i in items])
    row["kappa"], row["kappa_ci_low"], row["kappa_ci_high"] = _kappa(confusion, weights)
    row.update(_score_fields(pairs, weights))
    return row


def _human_row(instance_votes: list[list[Verdict]], resamples, rng) -> dict | None:
    items = []
    for humans in instance_votes:
        item = _Item(confusion=np.zeros((3, 3)))
        for first, second in combinations(humans, 2):
            _count(item, first, second)
        if item.with_ties:
            items.append(item)
    if not items:
        return None
    return _agreement_fields(items, _Resamples(len(items), resamples, rng))


def _compare(judge_votes: list[Verdict], humans: list[Verdict]) -> _Item:
    item = _Item(confusion=np.zeros((3, 3)))
    for judge in judge_votes:
        for human in humans:
            _count(item, judge, human)
    return item


def _count(item: _Item, first: Verdict, second: Verdict) -> None:
    agree = first == second
    item.with_ties += 1
    item.agree_with_ties += agree
    if "tie" not in (first, second):
        item.without_ties += 1
        item.agree_without_ties += agree
    item.confusion[VERDICTS.index(first), VERDICTS.index(second)] += 1  # type: ignore[index]


class _Resamples:
    """The bootstrap's resamples of n instances, drawn by ``scipy.stats.bootstrap`` (seeded,
    a block at a time) and handed to each statistic as rows of weights (how often each
    instance was drawn): the same draws for every statistic of a row, in memory that does
    not grow with resamples × instances."""

    BLOCK = 50

    def __init__(self, n: int, count: int, rng: np.random.Generator):
        self.n, self.count = n, count
        self.seed = int(rng.integers(2 ** 62))

    def map(self, statistic: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """``statistic(weights)`` (block × n → block values, or block × k) over every
        resample: resamples values (or resamples × k)."""
        if self.n < 2:  # every resample of one instance is that instance
            return statistic(np.ones((self.count, self.n)))

        def of_draws(drawn: np.ndarray, axis: int = -1) -> np.ndarray:
            block = len(drawn)  # block × n instance numbers
            weights = np.bincount((drawn + self.n * np.arange(block)[:, None]).ravel(),
                                  minlength=block * self.n).reshape(block, self.n)
            return np.moveaxis(statistic(weights), 0, -1)  # resamples last, as scipy keeps

        return np.moveaxis(bootstrap_distribution(
            [np.arange(self.n)], of_draws, self.count, self.seed, self.BLOCK), -1, 0)


def _share(hits: np.ndarray, totals: np.ndarray, weights: _Resamples):
    """The share hits/totals and its percentile interval over the weighted resamples."""
    total = totals.sum()
    if total == 0:
        return None, None, None
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = weights.map(lambda w: (w @ hits) / (w @ totals))
    draws = draws[~np.isnan(draws)]
    low, high = np.percentile(draws, [2.5, 97.5]) if draws.size else (None, None)
    return float(hits.sum() / total), _float(low), _float(high)


def _agreement_fields(items: list[_Item], weights: _Resamples) -> dict:
    row = {}
    for name in ("with_ties", "without_ties"):
        totals = np.array([getattr(i, name) for i in items], dtype=np.float64)
        hits = np.array([getattr(i, f"agree_{name}") for i in items], dtype=np.float64)
        row[f"n_{name}"] = int(totals.sum())
        share, low, high = _share(hits, totals, weights)
        row[f"agreement_{name}"] = share
        row[f"agreement_{name}_ci_low"], row[f"agreement_{name}_ci_high"] = low, high
    return row


def _kappa(confusion: np.ndarray, weights: _Resamples):
    """Cohen's κ of the pooled confusion, and its interval over the resamples."""
    def kappa(tables: np.ndarray) -> np.ndarray:  # (..., 3, 3)
        total = tables.sum(axis=(-2, -1))
        with np.errstate(invalid="ignore", divide="ignore"):
            observed = np.trace(tables, axis1=-2, axis2=-1) / total
            expected = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1) / total ** 2
            return (observed - expected) / (1 - expected)

    if confusion.sum() == 0:
        return None, None, None
    point = kappa(confusion.sum(axis=0))
    if np.isnan(point):
        return None, None, None
    draws = weights.map(lambda w: kappa(np.einsum("bn,nij->bij", w, confusion)))
    draws = draws[np.isfinite(draws)]
    low, high = np.percentile(draws, [2.5, 97.5]) if draws.size else (None, None)
    return float(point), _float(low), _float(high)


def _score_fields(pairs: list[tuple[int, float, float]], weights: _Resamples) -> dict:
    fields = {"n_scores": len(pairs), "spearman": None, "spearman_ci_low": None,
              "spearman_ci_high": None, "kendall": None, "kendall_ci_low": None,
              "kendall_ci_high": None, "interval_note": None}
    if len(pairs) < 2:
        return fields
    owner = np.array([p[0] for p in pairs])
    judge = np.array([p[1] for p in pairs])
    human = np.array([p[2] for p in pairs])
    x_values, x = np.unique(judge, return_inverse=True)
    y_values, y = np.unique(human, return_inverse=True)
    cells = np.zeros((len(pairs), x_values.size * y_values.size))
    cells[np.arange(len(pairs)), x * y_values.size + y] = 1
    shape = (x_values.size, y_values.size)
    point_table = cells.sum(axis=0).reshape(shape)
    rho, tau = (float(v) for v in _table_correlations(point_table[None])[:, 0])
    fields.update(spearman=None if np.isnan(rho) else rho,
                  kendall=None if np.isnan(tau) else tau)
    if max(shape) > MAX_SCORE_VALUES:
        fields["interval_note"] = (f"no interval: more than {MAX_SCORE_VALUES} distinct "
                                   "scores on a side")
        return fields
    both = weights.map(lambda w: _table_correlations(
        (w[:, owner] @ cells).reshape(-1, *shape)).T)  # resamples × (ρ, τ)
    for name, draws in zip(("spearman", "kendall"), both.T, strict=True):
        draws = draws[np.isfinite(draws)]
        if fields[name] is not None and draws.size:
            low, high = np.percentile(draws, [2.5, 97.5])
            fields[f"{name}_ci_low"], fields[f"{name}_ci_high"] = float(low), float(high)
    return fields


def _table_correlations(tables: np.ndarray) -> np.ndarray:
    """Spearman's ρ and Kendall's τ-b of each table of counts (resamples × x × y), both
    with ties: ρ as Pearson's r of midranks, τ-b from concordant and discordant pairs."""
    rows, cols = tables.sum(axis=2), tables.sum(axis=1)
    total = rows.sum(axis=1)

    def midranks(margin: np.ndarray) -> np.ndarray:
        return np.cumsum(margin, axis=1) - (margin - 1) / 2

    rank_x, rank_y = midranks(rows), midranks(cols)
    mean_x = (rows * rank_x).sum(axis=1) / total
    mean_y = (cols * rank_y).sum(axis=1) / total
    dx, dy = rank_x - mean_x[:, None], rank_y - mean_y[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.einsum("bij,bi,bj->b", tables, dx, dy) / np.sqrt(
            (rows * dx ** 2).sum(axis=1) * (cols * dy ** 2).sum(axis=1))
        # pairs with both coordinates larger (concordant) or x larger, y smaller
        after = np.flip(np.cumsum(np.flip(tables, axis=(1, 2)), axis=1), axis=(1, 2))
        above = np.flip(np.cumsum(np.flip(after, axis=2), axis=2), axis=2)  # x'≥i, y'≥j
        upper = np.zeros_like(tables)
        upper[:, :-1, :-1] = above[:, 1:, 1:]  # x' > i, y' > j
        lower = np.zeros_like(tables)
        right_cum = np.cumsum(after, axis=2)  # x' ≥ i, y' ≤ j
        lower[:, :-1, 1:] = right_cum[:, 1:, :-1]  # x' > i, y' < j
        concordant = (tables * upper).sum(axis=(1, 2))
        discordant = (tables * lower).sum(axis=(1, 2))
        pairs = total * (total - 1) / 2
        tied_x = (rows * (rows - 1) / 2).sum(axis=1)
        tied_y = (cols * (cols - 1) / 2).sum(axis=1)
        tau = (concordant - discordant) / np.sqrt((pairs - tied_x) * (pairs - tied_y))
    return np.stack([rho, tau])


def _float(value) -> float | None:
    return None if value is None else float(value)
