"""Estimates from many judge labels and a few human ones.

* **Prediction-powered inference** (Angelopoulos et al., "Prediction-powered inference",
  Science 382, 2023; with the power tuning of PPI++, Angelopoulos, Duchi and Zrnic 2023,
  arXiv 2311.01453), for a mean — the judge's preference rate or mean score corrected by
  the people's labels of a random part. With n labelled items (human Y, judge Ŷ) and N
  more the judge alone labelled (Ŷᵘ): θ̂ = mean(λŶᵘ) + mean(Y − λŶ), its standard error
  √(var(λŶᵘ)/N + var(Y − λŶ)/n) (variances over N and n), the normal interval; λ =
  cov(Y, Ŷ) / ((1 + n/N) var(Ŷ ∪ Ŷᵘ)) clipped to [0, 1] (λ = 1: plain PPI; λ = 0: the
  people alone). The same numbers as ``ppi_py.ppi_mean_ci`` (tested against it).
* **The plug-in correction** of a binary judge (Lee et al., "How to correctly report
  LLM-as-a-judge evaluations", arXiv 2511.21140; the authors' ``confidence_interval``):
  the judge calls p̂ of n test items correct; on the labelled items its specificity q̂₀
  (m₀ truly incorrect) and sensitivity q̂₁ (m₁ truly correct); θ̂ = (p̂ + q̂₀ − 1) /
  (q̂₀ + q̂₁ − 1). The interval smooths each share (p̃ = (np̂ + z²/2)/(n + z²), q̃ =
  (mq̂ + 1)/(m + 2), ñ = n + z², m̃ = m + 2), shifts the centre by
  2z²(θ̃q̃₁(1−q̃₁)/m̃₁ − (1−θ̃)q̃₀(1−q̃₀)/m̃₀) and spreads it by z·se with
  se² = (p̃(1−p̃)/ñ + (1−θ̃)²q̃₀(1−q̃₀)/m̃₀ + θ̃²q̃₁(1−q̃₁)/m̃₁)/(q̃₀+q̃₁−1)², clipped to
  [0, 1]: it carries the uncertainty of the test items and of the calibration items.
  Undefined when q̂₀ + q̂₁ ≤ 1 (the judge is no better than chance).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Estimate:
    """A mean with its interval."""

    value: float | None
    """The estimate (None when it cannot be computed: ``note`` says why)."""
    low: float | None = None
    """The interval's lower end."""
    high: float | None = None
    """Its upper end."""
    n: int = 0
    """Items it rests on."""
    note: str = ""
    """Why it is missing, or what it assumes."""

    @property
    def width(self) -> float | None:
        return None if self.low is None or self.high is None else self.high - self.low


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - level) / 2))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _var(values: Sequence[float], ddof: int = 0) -> float:
    centre = _mean(values)
    return sum((v - centre) ** 2 for v in values) / (len(values) - ddof)


def classical_mean(values: Sequence[float], level: float = 0.95) -> Estimate:
    """The mean of ``values`` with its normal interval (variance over n): the people
    alone, or the judge alone."""
    if len(values) < 2:
        return Estimate(None, n=len(values), note="fewer than 2 values")
    centre, half = _mean(values), _z(level) * math.sqrt(_var(values) / len(values))
    return Estimate(centre, centre - half, centre + half, len(values))


def ppi_mean(human: Sequence[float], judge_labelled: Sequence[float],
             judge_unlabelled: Sequence[float], level: float = 0.95,
             power_tuning: bool = True) -> tuple[Estimate, float]:
    """The prediction-powered mean (see the module docstring) and the λ used."""
    n, big_n = len(human), len(judge_unlabelled)
    if n != len(judge_labelled):
        raise ValueError("every labelled item needs the judge's label too")
    if n < 2 or big_n < 2:
        return Estimate(None, n=n, note="needs at least 2 labelled and 2 unlabelled "
                                        "items"), 1.0
    lam = 1.0
    if power_tuning:
        every = [*judge_labelled, *judge_unlabelled]
        spread = _var(every, ddof=1)
        y_mean, f_mean = _mean(human), _mean(judge_labelled)
        covariance = sum((y - y_mean) * (f - f_mean)
                         for y, f in zip(human, judge_labelled, strict=True)) / n
        lam = 0.0 if spread == 0 else min(1.0, max(0.0, covariance /
                                                    ((1 + n / big_n) * spread)))
    rectifier = [y - lam * f for y, f in zip(human, judge_labelled, strict=True)]
    centre = lam * _mean(judge_unlabelled) + _mean(rectifier)
    se = math.sqrt(lam ** 2 * _var(judge_unlabelled) / big_n + _var(rectifier) / n)
    half = _z(level) * se
    return Estimate(centre, centre - half, centre + half, n + big_n), lam


def effective_labels(human_only: Estimate, corrected: Estimate, n_labelled: int
                     ) -> float | None:
    """How many human labels the people alone would need for the corrected interval's
    width: n × (width alone / width corrected)²."""
    if not human_only.width or not corrected.width:
        return None
    return n_labelled * (human_only.width / corrected.width) ** 2


def plug_in_correction(p: float, q0: float, q1: float, n: int, m0: int, m1: int,
                       level: float = 0.95) -> Estimate:
    """The bias-adjusted share of truly correct items and its interval (see the module
    docstring): ``p`` the share the judge calls correct among ``n`` test items, ``q0``
    its specificity on ``m0`` truly incorrect labelled items, ``q1`` its sensitivity on
    ``m1`` truly correct ones."""
    if min(n, m0, m1) <= 0:
        return Estimate(None, n=n, note="needs labelled items of both kinds and test items")
    if q0 + q1 <= 1:
        return Estimate(None, n=n, note=f"the judge is no better than chance here "
                                        f"(specificity {q0:.2f} + sensitivity {q1:.2f} ≤ 1)")
    centre = min(1.0, max(0.0, (p + q0 - 1) / (q0 + q1 - 1)))
    z = _z(level)
    p_s, q0_s, q1_s = (n * p + z * z / 2) / (n + z * z), (m0 * q0 + 1) / (m0 + 2), \
        (m1 * q1 + 1) / (m1 + 2)
    n_s, m0_s, m1_s = n + z * z, m0 + 2, m1 + 2
    if q0_s + q1_s <= 1:
        return Estimate(centre, n=n, note="too few labelled items for an interval")
    theta = (p_s + q0_s - 1) / (q0_s + q1_s - 1)
    shift = 2 * z * z * (-(1 - theta) * q0_s * (1 - q0_s) / m0_s
                         + theta * q1_s * (1 - q1_s) / m1_s)
    se = math.sqrt(p_s * (1 - p_s) / n_s + (1 - theta) ** 2 * q0_s * (1 - q0_s) / m0_s
                   + theta ** 2 * q1_s * (1 - q1_s) / m1_s) / (q0_s + q1_s - 1)
    low, high = theta + shift - z * se, theta + shift + z * se
    # both ends into [0, 1]: clipping each on one side only turned an interval wholly
    # below 0 into [0, −0.36] (issue 53); such an interval is said, not only clipped
    note = "" if high >= 0 and low <= 1 else (
        f"the interval ({low:.2f}, {high:.2f}) lies outside [0, 1]: the judge's verdicts "
        "on the test items disagree with its accuracy on the labelled ones")
    return Estimate(centre, _unit(low), _unit(high), n, note=note)


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))
