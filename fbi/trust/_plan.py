"""How many more labels would settle it: for the interval width asked, and for
certifying the target."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from fbi.metrics import (
    wilson_interval,
)
from fbi.trust._calibration import (
    TrustItem,
    binomial_upper,
)
from fbi.trust._models import (
    PlanRow,
    TrustResult,
)
from fbi.trust._settings import TrustSettings


def plan(result: TrustResult, items: Sequence[TrustItem], settings: TrustSettings,
         categories: dict[str, str]) -> list[PlanRow]:
    """How many more labels: per category, for the agreement interval to reach the
    target width (Wilson, at the category's current agreement); per confidence band
    (the items at or above each quartile of confidence), to certify the target if the
    band's disagreement rate holds."""
    rows = []
    labelled = [i for i in items if i.human is not None]
    by_category: dict[str, list[TrustItem]] = defaultdict(list)
    for item in labelled:
        by_category[categories.get(item.key[0], "?")].append(item)
    goal = f"agreement interval ≤ {settings.width:g} wide ({result.judge}, {result.strategy})"
    for category, members in sorted(by_category.items()):
        agree = sum(i.verdict == i.human for i in members)
        needed = _labels_for_width(agree / len(members), settings.width)
        rows.append(PlanRow(goal=goal, where=f"category {category}", labelled=len(members),
                            needed=needed, more=max(0, needed - len(members))))
    confidences = sorted(i.confidence for i in labelled)
    bands = sorted({confidences[min(len(confidences) - 1, int(q * len(confidences)))]
                    for q in (0.75, 0.5, 0.25)} if labelled else set(), reverse=True)
    for threshold in bands:
        band = [i for i in labelled if i.confidence >= threshold]
        rate = sum(i.verdict != i.human for i in band) / len(band)
        needed = _labels_to_certify(rate, settings.target, settings.delta)
        rows.append(PlanRow(
            goal=f"certify {100 * settings.target:.0f}% agreement at δ = "
                 f"{settings.delta:g} ({result.judge}, {result.strategy})",
            where=f"confidence ≥ {threshold:.2f} ({100 * len(band) / len(labelled):.0f}% "
                  f"of the labelled items, {100 * rate:.0f}% disagreement)",
            labelled=len(band), needed=needed,
            more=None if needed is None else max(0, needed - len(band))))
    return rows


def _labels_for_width(agreement: float, width: float) -> int:
    """The smallest n whose Wilson interval at this agreement is at most ``width`` wide."""
    n = 1
    while n < 1_000_000:
        low, high = wilson_interval(round(agreement * n), n) or (0.0, 1.0)
        if high - low <= width:
            return n
        n = max(n + 1, int(n * 1.2))
    return n


def _labels_to_certify(rate: float, target: float, delta: float) -> int | None:
    """The smallest n whose exact bound at this disagreement rate certifies the target;
    None when the rate itself is above 1 − target."""
    alpha = 1 - target
    if rate >= alpha:
        return None
    low, high = 1, 1
    while binomial_upper(math.floor(rate * high), high, delta) > alpha:
        low, high = high, high * 2
        if high > 10_000_000:
            return None
    while low < high:
        middle = (low + high) // 2
        if binomial_upper(math.floor(rate * middle), middle, delta) <= alpha:
            high = middle
        else:
            low = middle + 1
    return high
