"""Confirming candidates on held-out items (issues 40 and 49).

**Data splitting.** The gold items are split in two before anything is judged; the search
sees one half and chooses at most ``MAX_CANDIDATES`` descriptions; the confirmation makes
new edits of the *other* half's items for each, and for a baseline. The held-out probes
are independent of the choice, so a test on them is valid as if the descriptions had been
fixed in advance (Cox, "A note on data-splitting for the evaluation of significance
levels", Biometrika 62(2), 1975, 441–444), and the correction need only cover the
candidates carried there, not the thousands of descriptions the search scored: Bonferroni
over the K candidates and the G widest descriptions of their blind spots
(`fbi.hunt._neighbours`, fixed by the candidates alone), each confirmed at
``alpha / (K + G)`` (valid whatever the dependence between the tests).

**The test.** A blind spot is a material difference, so each candidate is tested for
being missed more than ``margin`` (10 points by default) more often than the baseline
(and, on a handful of edits where that test's normal approximation fails, by Fisher's
exact test as well: `confirmation_test`; fewer than ``MIN_HELD_OUT`` edits confirm
nothing):
H0: p_inside − p_baseline ≤ margin, by the score test of Farrington and Manning
("Test statistics and sample size formulae for comparative binomial trials with null
hypothesis of non-zero risk difference or non-unity relative risk", Statistics in
Medicine 9, 1990, 1447–1454), its constrained maximum-likelihood estimates in the closed
form they give. (statsmodels' ``test_proportions_2indep(method="score",
correction=False)`` is the same test, but its restricted estimate has a wrong
coefficient for a non-zero margin, statsmodels issue #10269; tests/test_hunt.py checks
this one against statsmodels at margin 0 and against a numerical maximum of the
restricted likelihood otherwise.) A judge
with random misses and no blind spot gets nothing confirmed: its candidates' held-out
rates sit at the baseline's, a margin below what the test asks.

**How many held-out edits.** Each candidate gets as many as give the margin test 90%
power (`probes_needed`, Farrington and Manning's sample size, 1990, §3) at its Bonferroni
level, for the rates its *search* evidence bounds (`planned_rates`) — a function of the
search half only, so the sizes are fixed before any held-out edit is judged and the test
stays valid; the baseline as many outside every candidate as the largest need (the
planner, `fbi.hunt._planner`).

**Explaining away.** Candidates are tested loudest first (by the low end of their
search miss rate's bound: `fbi.hunt._findings.Summary.tested_order`, a function of the search
half only), each later one against the held-out probes that the findings already
confirmed do not cover (its own and the baseline's alike), so a quiet blind spot is
measured against the judge's ordinary misses, not against a louder one's; a candidate
whose probes are explained by an earlier finding is *merged* into it.
"""

from __future__ import annotations

import math

from scipy import stats

from fbi.metrics import wilson_interval

#: Held-out edits a candidate needs before it can be confirmed.
MIN_HELD_OUT = 10
#: A candidate's held-out edits are as many as give its test this power at the rates
#: its search evidence supports (`planned_rates`; one-sided 95% bounds) — no more.
POWER = 0.9
SIZING_Z = 1.6448536269514722


def margin_test(misses: int, n: int, base_misses: int, base_n: int,
                margin: float) -> float:
    """One-sided p-value of H0: p − p_base ≤ ``margin`` (Farrington–Manning score
    test); 1.0 when either group is empty."""
    if not n or not base_n:
        return 1.0
    p1, p2 = misses / n, base_misses / base_n
    if margin == 0:  # the restricted estimate is the pooled rate
        pooled = (misses + base_misses) / (n + base_n)
        variance = pooled * (1 - pooled) * (1 / n + 1 / base_n)
    else:
        r1, r2 = _restricted(p1, n, p2, base_n, margin)
        variance = r1 * (1 - r1) / n + r2 * (1 - r2) / base_n
    difference = p1 - p2 - margin
    if variance <= 0:
        return 0.0 if difference > 0 else 1.0
    return float(stats.norm.sf(difference / math.sqrt(variance)))


def _restricted(p1: float, n1: int, p2: float, n2: int, delta: float
                ) -> tuple[float, float]:
    """The maximum-likelihood (p1, p2) under p1 − p2 = delta (Farrington and Manning
    1990, §2, the cubic's closed-form root)."""
    theta = n2 / n1
    a = 1 + theta
    b = -(1 + theta + p1 + theta * p2 + delta * (theta + 2))
    c = delta * delta + delta * (2 * p1 + theta + 1) + p1 + theta * p2
    d = -p1 * delta * (1 + delta)
    v = b ** 3 / (3 * a) ** 3 - b * c / (6 * a * a) + d / (2 * a)
    u = math.copysign(math.sqrt(max(b * b / (3 * a) ** 2 - c / (3 * a), 0.0)), v)
    if u == 0:
        r1 = -b / (3 * a)
    else:
        w = (math.pi + math.acos(max(-1.0, min(1.0, v / u ** 3)))) / 3
        r1 = 2 * u * math.cos(w) - b / (3 * a)
    r1 = min(1.0, max(delta, r1))
    return r1, r1 - delta


def confirmation_test(misses: int, n: int, base_misses: int, base_n: int,
                      margin: float) -> float:
    """The held-out test of a candidate: the margin test, and no smaller than Fisher's
    exact test of a plain difference (a test that rejects only when both do). The score
    test's normal approximation is poor on a handful of edits (one miss in one edit would
    pass at 0.02); Fisher's is exact there, and asks less than the margin elsewhere.
    Fewer than ``MIN_HELD_OUT`` held-out edits confirm nothing (p = 1)."""
    if n < MIN_HELD_OUT:
        return 1.0
    exact = stats.fisher_exact([[misses, n - misses], [base_misses, base_n - base_misses]],
                               alternative="greater").pvalue if base_n else 1.0
    return max(margin_test(misses, n, base_misses, base_n, margin), float(exact))


def probes_needed(rate: float, base_rate: float, margin: float, alpha: float,
                  power: float = POWER) -> int | None:
    """Held-out edits a candidate needs for the margin test to confirm it at level
    ``alpha`` with probability ``power``, if its miss rate is ``rate`` and the baseline's
    ``base_rate`` (as many baseline edits as its own, which the baseline's are at least):
    Farrington and Manning's sample size (1990, §3),
    n = (z_α·σ₀ + z_β·σ₁)² / (rate − base_rate − margin)², σ₀² the variance at the
    restricted estimates, σ₁² at the rates themselves; at least ``2·MIN_HELD_OUT``, as
    Fisher's exact test must agree. None when ``rate`` is not ``margin`` above."""
    difference = rate - base_rate - margin
    if difference <= 1e-9:  # (none, up to rounding)
        return None
    r1, r2 = _restricted(rate, 1, base_rate, 1, margin)
    z_alpha, z_beta = stats.norm.isf(alpha), stats.norm.isf(1 - power)
    sigma0 = math.sqrt(r1 * (1 - r1) + r2 * (1 - r2))
    sigma1 = math.sqrt(rate * (1 - rate) + base_rate * (1 - base_rate))
    n = ((z_alpha * sigma0 + z_beta * sigma1) / difference) ** 2
    return max(2 * MIN_HELD_OUT, math.ceil(n))


def planned_rates(misses: int, n: int, outside_misses: int, outside_n: int
                  ) -> tuple[float, float]:
    """The rates a candidate's held-out test is sized for, from its search evidence: its
    miss rate as low as the search allows and the rest's as high (the ends of their
    one-sided 95% Wilson bounds), so the winner's curse of a search that chose it on
    these probes does not make its held-out test too small."""
    low = wilson_interval(misses, n, SIZING_Z)
    high = wilson_interval(outside_misses, outside_n, SIZING_Z)
    return (0.0 if low is None else low[0]), (1.0 if high is None else high[1])


def bonferroni(p_value: float, family: int) -> float:
    """``p_value`` adjusted for a family of ``family`` tests."""
    return min(1.0, p_value * max(1, family))

