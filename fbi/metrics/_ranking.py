"""Ranking stability: do two judges (or two strategies) agree on which errors are hardest?

Each side — a judge under a strategy — ranks the categories by its own undetected rate
(over its readable verdicts, as its table shows them; score-invariant and extra
categories left out, as in `fbi.metrics._compare`). For every pair of judges under
a strategy both ran, and every pair of strategies one judge ran: Kendall's τ-b between the
two rankings (ties counted as Kendall's b does, as ``scipy.stats.kendalltau`` computes
it), over the categories both sides judged.

The interval is a paired bootstrap over instances, stratified by category: each resample
draws every category's instances with replacement (``scipy.stats.bootstrap``, each
category an unpaired sample of its own), the same draw for every side, and each side's
rates are worked out again on it. The draws are made once for all sides, so
a report of 20 judges × 11 strategies (3,190 pairs) costs seconds. Percentile interval,
seeded, `RANKING_RESAMPLES` resamples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from itertools import combinations

import numpy as np

from fbi.metrics._bootstrap import bootstrap_distribution
from fbi.metrics._compare import Side, readable_by_side
from fbi.metrics._outcomes import InstanceOutcome
from fbi.metrics._results import RankingRow
from fbi.taxonomy import strategy_order

#: Fewer than the noise metrics' 2,000: 1,000 resamples give a 95% percentile interval of τ to
#: about ±0.01, and the cost grows with resamples × instances × judges.
RANKING_RESAMPLES = 1000
#: Below this many readable instances in a ranked category (either side) no interval is
#: given: resampling within a category of one or two instances barely varies its rate,
#: and the interval would look far surer than the data are.
MIN_PER_CATEGORY = 5
_BLOCK = 100  # resamples drawn at once: a block of 200,000 instances is 80 MB of indices


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b between ``x`` and ``y`` along their last axis (any leading shape);
    NaN where either is constant or holds a NaN. (nc − nd) / √((n0 − n1)(n0 − n2)), with
    n1, n2 the pairs tied in x and in y."""
    rows, cols = np.triu_indices(x.shape[-1], 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = np.sign(np.nan_to_num(x[..., rows] - x[..., cols])).astype(np.int8)
        dy = np.sign(np.nan_to_num(y[..., rows] - y[..., cols])).astype(np.int8)
        untied_x = rows.size - (dx == 0).sum(axis=-1)
        untied_y = rows.size - (dy == 0).sum(axis=-1)
        tau = (dx * dy).sum(axis=-1, dtype=np.int64) / np.sqrt(untied_x * untied_y)
    return np.where(np.isnan(x).any(axis=-1) | np.isnan(y).any(axis=-1), np.nan, tau)


def ranking_stability(outcomes: Iterable[InstanceOutcome],
                      resamples: int = RANKING_RESAMPLES, seed: int = 0) -> list[RankingRow]:
    """One row per pair of sides: ``kind`` ("judges": two judges under one strategy;
    "strategies": one judge's two strategies), both sides, ``categories`` ranked (those
    both judged), ``instances`` both judged readably in them, ``tau`` (None with fewer
    than two categories or a constant ranking), ``ci_low``/``ci_high`` (95% percentile
    bootstrap; None without ``tau``)."""
    readable = readable_by_side(outcomes)
    if len(readable) < 2:
        return []
    order = strategy_order({strategy for _, strategy in readable})
    sides = sorted(readable, key=lambda side: (side[0], order.index(side[1])))
    universe = _Universe(readable)
    judged = {side: universe.flags(readable[side], judged=True) for side in sides}
    counts = {side: np.bincount(universe.codes, weights=judged[side],
                                minlength=len(universe.categories)) for side in sides}
    missed = {side: universe.flags(readable[side], judged=False) for side in sides}
    rates = {side: universe.rates(judged[side], missed[side]) for side in sides}
    resampled = universe.resampled_rates(judged, missed, resamples, seed)
    by_strategy: dict[str, list[Side]] = defaultdict(list)
    by_judge: dict[str, list[Side]] = defaultdict(list)
    for side in sides:
        by_strategy[side[1]].append(side)
        by_judge[side[0]].append(side)
    pairs = [("judges", a, b) for group in by_strategy.values() for a, b in combinations(group, 2)]
    pairs += [("strategies", a, b) for group in by_judge.values()
              for a, b in combinations(group, 2)]
    rows: list[RankingRow] = []
    for kind, a, b in pairs:
        ranked = ~np.isnan(rates[a]) & ~np.isnan(rates[b])
        row = {"kind": kind, "judge_a": a[0], "strategy_a": a[1], "judge_b": b[0],
               "strategy_b": b[1], "categories": int(ranked.sum()),
               "instances": int((judged[a] & judged[b] & ranked[universe.codes]).sum()),
               "fewest_per_category": int(min(counts[a][ranked].min(), counts[b][ranked].min()))
               if ranked.any() else 0,
               "tau": None, "ci_low": None, "ci_high": None}
        tau = float(kendall_tau_b(rates[a][ranked], rates[b][ranked])) if ranked.sum() > 1 \
            else float("nan")
        if not np.isnan(tau):
            taus = kendall_tau_b(resampled[a][:, ranked], resampled[b][:, ranked])
            taus = taus[~np.isnan(taus)]  # a resample can make a ranking constant
            row["tau"] = tau
            if taus.size and row["fewest_per_category"] >= MIN_PER_CATEGORY:
                row["ci_low"], row["ci_high"] = (float(v) for v in np.percentile(
                    taus, [2.5, 97.5]))
        rows.append(RankingRow(**row))
    return rows


class _Universe:
    """Every instance any side judged, grouped by category (one run of positions per
    category), so one draw of positions resamples every side at once."""

    def __init__(self, readable: dict[Side, dict[str, InstanceOutcome]]):
        first: dict[str, InstanceOutcome] = {}
        for outcomes in readable.values():
            for instance_id, outcome in outcomes.items():
                first.setdefault(instance_id, outcome)
        self.categories = sorted({o.category for o in first.values()})
        ids = sorted(first, key=lambda i: (first[i].category, i))
        self.position = {instance_id: n for n, instance_id in enumerate(ids)}
        code = {name: k for k, name in enumerate(self.categories)}
        self.codes = np.array([code[first[i].category] for i in ids], dtype=np.int64)
        self.sizes = np.bincount(self.codes, minlength=len(self.categories))
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])

    def flags(self, outcomes: dict[str, InstanceOutcome], judged: bool) -> np.ndarray:
        """Per position: judged readably by the side (``judged``), or missed by it."""
        flags = np.zeros(len(self.position), dtype=bool)
        flags[[self.position[i] for i, o in outcomes.items()
               if judged or o.outcome == "undetected"]] = True
        return flags

    def rates(self, judged: np.ndarray, missed: np.ndarray) -> np.ndarray:
        """Undetected rate per category; NaN where the side judged none."""
        size = len(self.categories)
        counts = np.bincount(self.codes, weights=judged, minlength=size)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.bincount(self.codes, weights=missed, minlength=size) / counts

    def resampled_rates(self, judged: dict[Side, np.ndarray], missed: dict[Side, np.ndarray],
                        resamples: int, seed: int) -> dict[Side, np.ndarray]:
        """Per side, resamples × categories rates over the same stratified draws:
        ``scipy.stats.bootstrap`` resamples each category's positions on its own (its
        samples unpaired), a block at a time; a category of one instance is the same in
        every resample, so it is held as it is rather than drawn."""
        sides = list(judged)
        judged_all = np.stack([judged[side] for side in sides])  # sides × positions
        missed_all = np.stack([missed[side] for side in sides])
        strata = [np.arange(first, first + size) for first, size in
                  zip(self.starts, self.sizes, strict=True)]
        drawn_at = [k for k, positions in enumerate(strata) if len(positions) > 1]

        def rates(*drawn: np.ndarray, axis: int = -1) -> np.ndarray:
            # every category's positions, drawn or held: block × positions
            block = drawn[0].shape[0] if drawn else 1
            columns = list(strata)
            for k, positions in zip(drawn_at, drawn, strict=True):
                columns[k] = positions
            draw = np.concatenate([np.broadcast_to(c, (block, c.shape[-1]))
                                   for c in columns], axis=1)
            out = np.empty((len(sides), len(self.categories), block))
            for n in range(len(sides)):  # a side at a time: memory of one block × positions
                counts = np.add.reduceat(judged_all[n][draw], self.starts, axis=1)
                misses = np.add.reduceat(missed_all[n][draw], self.starts, axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[n] = (misses / counts).T
            return out  # sides × categories × block

        if not drawn_at:  # nothing to draw: every resample is the data
            distribution = np.repeat(rates(), resamples, axis=-1)
        else:
            distribution = bootstrap_distribution([strata[k] for k in drawn_at], rates,
                                                  resamples, seed, _BLOCK)
        return {side: distribution[n].T for n, side in enumerate(sides)}
