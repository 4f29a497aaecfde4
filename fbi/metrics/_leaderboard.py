"""The evaluator leaderboard: which (judge, strategy) misses the fewest planted errors,
with what it costs — from stored judgments and the rate rows, no model call."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from fbi.metrics._results import GroupRate, LeaderboardRow, PairwiseBreakdown
from fbi.records import Judgment

ABILITIES = ("LF", "F", "IF", "R")


def cost_per_1000(judgments: Iterable[Judgment], repeats: Iterable[Judgment] = ()
                  ) -> float | None:
    """USD per 1,000 judgments: what every call paid — each judgment's and its further
    samples' (``--samples K``) — over the judgments made (a call that failed is none); a
    call answered from the cache paid nothing. None when a paid call's price is unknown.
    The one figure the leaderboard and the certificate both show (they differed: $0.82
    against $1.15 for one run; issue 53)."""
    judged = [j for j in judgments if j.status != "error"]
    paid = [j for j in [*judged, *(r for r in repeats if r.status != "error")]
            if not j.cached]
    if not judged or any(j.cost is None for j in paid):
        return None
    return 1000 * sum(j.cost for j in paid) / len(judged)  # type: ignore[misc]


def leaderboard(rates: list[GroupRate], pairwise: list[PairwiseBreakdown],
                judgments: Iterable[Judgment], repeats: Iterable[Judgment] = ()
                ) -> list[LeaderboardRow]:
    """One row per judge × strategy, ranked by the overall undetected rate (lowest
    first; a pair with no readable verdict last), with its 95% interval, the per-ability
    rates, SI retained, the unparseable share, the pairwise flip rate, and cost and model
    time per 1,000 judgments from the stored usage, further samples included
    (`cost_per_1000`; calls answered from the cache cost nothing and take no time),
    and, for reasoning judges, the reasoning tokens a judgment spent and their cost."""
    usage: dict[tuple[str, str], list[Judgment]] = defaultdict(list)
    for judgment in judgments:
        usage[(judgment.judge, judgment.strategy)].append(judgment)
    samples: dict[tuple[str, str], list[Judgment]] = defaultdict(list)
    for judgment in repeats:
        samples[(judgment.judge, judgment.strategy)].append(judgment)
    rows: dict[tuple[str, str], dict] = {}
    for rate in rates:
        key = (rate.judge, rate.strategy)
        row = rows.setdefault(key, {"judge": key[0], "strategy": key[1],
                                    "paradigm": rate.paradigm})
        if rate.level == "overall":
            row.update(rate=rate.rate, ci_low=rate.ci_low, ci_high=rate.ci_high,
                       instances=rate.instances,
                       unparseable_share=rate.unparseable / rate.n if rate.n else None)
        elif rate.level == "ability":
            row[rate.group] = rate.rate
        elif rate.level == "score-invariant":
            row["SI_retained"] = rate.rate
    flips = {(p.judge, p.strategy): p.flip_rate for p in pairwise if p.group == "all"}
    for key, row in rows.items():
        calls = [j for j in usage.get(key, []) if j.status != "error"]
        more = [j for j in samples.get(key, []) if j.status != "error"]
        paid = [j for j in [*calls, *more] if not j.cached]
        row["flip_rate"] = flips.get(key)
        row["judgments"] = len(calls)
        row["cost_per_1000"] = cost_per_1000(calls, more)
        row["seconds_per_1000"] = (1000 * sum(j.latency_s for j in paid) / len(calls)
                                   if calls else None)
        reasoned = sum(j.reasoning_tokens for j in calls)
        reasoning_costs = [j.reasoning_cost for j in paid]
        row["reasoning_tokens_per_judgment"] = reasoned / len(calls) if reasoned else None
        row["reasoning_cost_per_1000"] = (
            1000 * sum(reasoning_costs) / len(calls)
            if reasoned and None not in reasoning_costs else None)
        for name in (*ABILITIES, "SI_retained", "rate", "ci_low", "ci_high",
                     "unparseable_share", "instances"):
            row.setdefault(name, None)
    ranked = sorted(rows.values(), key=lambda r: (r["rate"] is None, r["rate"] or 0.0,
                                                  r["judge"], r["strategy"]))
    _rank_with_ties(ranked)
    return [LeaderboardRow(**row) for row in ranked]


def _rank_with_ties(ranked: list[dict]) -> None:
    """Standard competition ranking ("1, 1, 1, 1, 5"): equal rates share the best rank,
    so the alphabet never decides an order the data does not. Rates are compared to 12
    places: the same fraction worked out by two sums may differ in its last bits."""
    rank, previous = 0, None
    for position, row in enumerate(ranked, start=1):
        if row["rate"] is None:
            row["rank"] = None
            continue
        if previous is None or round(row["rate"], 12) != previous:
            rank, previous = position, round(row["rate"], 12)
        row["rank"] = rank
