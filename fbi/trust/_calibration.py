"""Selective judging with a guaranteed human-agreement level: "Trust or Escalate" (Jung,
Brahman and Choi 2024, arXiv 2407.18370): its selective evaluation with the guarantee
by fixed-sequence testing, its Simulated Annotators (confidence from several simulated
judgments) and its Cascaded Selective Evaluation. The paper is not among
``../shared/papers``; the procedure is the one the authors' released code runs
(jaehunjung1/cascaded-selective-evaluation, ``cascaded_evaluation/util.py`` and
``cascaded_classifier.py``), with the differences said below.

An *item* is one instance under one strategy: the judge's verdict on it (a / b / tie,
`judge_verdict`), the judge's confidence in that verdict, and — for the labelled part —
the people's verdict. The judge is trusted on an item when its confidence is at least a
threshold λ; its *selective risk* R(λ) is the share of trusted items on which it
disagrees with the people. For a target agreement 1 − α and an error level δ, λ̂ is
chosen on a calibration set so that P(R(λ̂) ≤ α) ≥ 1 − δ:

* the candidate thresholds (`GRIDS`), tested from the highest down — their order is
  fixed by the confidences alone, never by the labels: ``distinct``, every distinct
  confidence; ``coarse``, one every ``min_items`` items (the highest confidence with
  at least ``min_items`` items at or above it, then ``2 × min_items``, ..., and every
  item); ``authors``, the authors' grid, 5,000 points evenly spaced over [0, 1] with at
  least ``min_items`` items at or above each; ``multistart``, the coarse thresholds
  tested from several starts (Learn then Test's fixed-sequence testing with multiple
  starts, Angelopoulos et al. 2021): from the first threshold reaching ``min_items``,
  ``2 × min_items``, ``4 × min_items``, ... items, each sequence at δ/m for m starts
  (Bonferroni: every threshold any of them passes holds together with probability
  ≥ 1 − δ), and λ̂ the lowest passed. ``auto`` (the default) takes ``multistart`` when
  the confidence is continuous (more distinct values than one per ``min_items``
  items), else ``distinct``. With a continuous confidence a single sequence tests one
  threshold an item, and one disagreement among the few most confident items ends it
  before it reaches the thresholds that hold; a later start does not need them
  (measured in ``benchmarks/trust_grids.py``). The authors' code tests λ − 1/L (L the
  grid's length after the filter) and returns λ, which it has not tested when 1/L is not
  the grid's step; fbi tests each threshold it may return. At each λ, with n(λ) items at or above
  it and e(λ) disagreements, the exact binomial upper bound R⁺(λ) is the r with
  P(Binomial(n(λ), r) ≤ e(λ)) = δ (Clopper–Pearson, one-sided, `binomial_upper`);
* the null R(λ) > α is rejected while R⁺(λ) ≤ α; the first failure stops the sequence
  and λ̂ is the last λ rejected (fixed-sequence testing controls the error at δ with no
  correction for the number of tests). When the highest λ already fails, nothing is
  certified — fbi says so, where the authors' code returns that λ anyway.

Confidence: the share of a judge's ``--samples`` askings that give the majority verdict
(as the paper's Simulated Annotators take the agreement of simulated judgments), the
probability of the verdict under
the ``--logprobs`` score distributions (single-answer: P(gold score > perturbed score) and
the like, the two calls independent), or the share of several judges giving the
majority verdict (a jury).

Cascades (Cascaded Selective Evaluation): judges tried cheapest first; each is
calibrated on the calibration items the judges before it did not take, at δ / J
(Bonferroni over the J judges, so the whole cascade keeps 1 − δ; the authors' code uses
δ at each stage), and takes the items at or above its threshold; what the last leaves
goes to people.

The guarantee assumes the calibration items and the items judged later are exchangeable
(drawn alike from one distribution): it says nothing of a new kind of data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from fbi.metrics import VERDICTS, Verdict

#: Thresholds with fewer calibration items at or above them are skipped, not tested (as
#: the authors' code skips them): the bound is valid at any n, but one disagreement among
#: the few most confident items would end the sequence before it could certify anything.
#: Which thresholds are skipped depends on the confidences alone, never on the labels.
MIN_ITEMS = 30

#: The candidate thresholds of the fixed sequence (see the module docstring).
GRIDS = ("auto", "multistart", "coarse", "distinct", "authors")
#: The authors' grid: ``torch.linspace(0, 1, 5000)`` in their ``util.py``.
AUTHORS_GRID_POINTS = 5000


@dataclass(frozen=True, slots=True)
class TrustItem:
    """One instance under one strategy, as selective judging sees it."""

    key: tuple[str, str]
    """(instance id, strategy)."""
    verdict: Verdict
    """The judge's verdict (a: gold better, b: perturbed better, tie)."""
    confidence: float
    """The judge's confidence in it, in [0, 1]."""
    human: Verdict | None = None
    """The people's majority verdict, where labelled."""
    cost: float | None = None
    """What the judge's calls on it cost (USD), when known."""


@dataclass(frozen=True)
class SequenceStep:
    """One threshold tried by the fixed-sequence test."""

    threshold: float
    """λ."""
    n: int
    """Calibration items at or above it."""
    errors: int
    """Of those, where the judge disagrees with the people."""
    risk_upper: float
    """The exact binomial upper bound on the disagreement rate at 1 − δ (``multistart``:
    at 1 − δ/m, m the number of starts)."""
    passed: bool
    """Whether R⁺(λ) ≤ α."""
    start: int = 0
    """``multistart``: the items at or above the threshold its sequence started from."""


@dataclass
class Calibration:
    """The threshold fixed-sequence testing chose, or why there is none."""

    target: float
    """The agreement asked for, 1 − α."""
    delta: float
    """The error level δ: the guarantee holds with probability at least 1 − δ."""
    n_calibration: int
    """Labelled items it was calibrated on."""
    certified: bool
    """Whether some threshold was certified."""
    threshold: float | None = None
    """λ̂ (None when nothing is certified)."""
    agreement_lower_bound: float | None = None
    """1 − R⁺(λ̂) at the chosen threshold: a description of the calibration items, not a
    guarantee (λ̂ was chosen by the same data; over planted draws the true agreement fell
    below it in 13% of draws at δ = 0.1). What holds with probability ≥ 1 − δ is
    agreement ≥ ``target``."""
    calibration_coverage: float | None = None
    """Share of the calibration items at or above λ̂."""
    steps: list[SequenceStep] = field(default_factory=list)
    """Every threshold tried, in order; the last failed (or the sequence ran out)."""
    grid: str = "distinct"
    """Which thresholds the sequence tried (`GRIDS`; ``auto`` resolved)."""

    @property
    def failure(self) -> str:
        """Why nothing is certified, in words (empty when certified)."""
        if self.certified:
            return ""
        if self.n_calibration == 0:
            return "no labelled item to calibrate on"
        if not self.steps:
            return "no confidence value to try"
        first = self.steps[0]
        return (f"even its most confident {first.n} calibration item(s) (confidence ≥ "
                f"{first.threshold:.3g}) have {first.errors} disagreement(s): agreement is "
                f"certified only down to {1 - first.risk_upper:.3f} < {self.target:g} at "
                f"δ = {self.delta:g}")


def binomial_upper(errors, n, delta: float):
    """The exact one-sided upper bound on a binomial proportion at level 1 − δ: the r with
    P(Binomial(n, r) ≤ errors) = δ (Clopper–Pearson; 1 when every trial failed). Takes
    numbers or numpy arrays (one bound per pair)."""
    import numpy as np
    from scipy.stats import beta

    errors, n = np.asarray(errors), np.asarray(n)
    safe = errors < n
    bound = np.ones(np.broadcast(errors, n).shape)
    bound[safe] = beta.ppf(1 - delta, (errors + 1)[safe] if errors.ndim else errors + 1,
                           (n - errors)[safe] if np.ndim(n - errors) else n - errors)
    return float(bound) if bound.ndim == 0 else bound


def calibrate(items: Sequence[TrustItem], target: float, delta: float,
              min_items: int = MIN_ITEMS, grid: str = "auto") -> Calibration:
    """λ̂ by fixed-sequence testing on the labelled ``items`` over the thresholds of
    ``grid`` (see the module docstring). ``target`` and ``delta`` must lie in (0, 1)."""
    import numpy as np

    for name, value in (("target", target), ("delta", delta)):
        if not 0 < value < 1:
            raise ValueError(f"{name} must lie strictly between 0 and 1, not {value}")
    if grid not in GRIDS:
        raise ValueError(f"grid must be one of {', '.join(GRIDS)}, not {grid!r}")
    labelled = [i for i in items if i.human is not None]
    confidence = np.array([i.confidence for i in labelled], dtype=float)
    if grid == "auto":  # by the confidences alone: continuous ones get several starts
        grid = "multistart" if len(np.unique(confidence)) > \
            max(1, len(labelled) // min_items) else "distinct"
    result = Calibration(target, delta, len(labelled), certified=False, grid=grid)
    if not labelled:
        return result
    wrong = np.array([i.verdict != i.human for i in labelled], dtype=np.int64)
    order = np.argsort(-confidence, kind="stable")
    confidence, wrong = confidence[order], wrong[order]
    thresholds, n = _thresholds(confidence, "coarse" if grid == "multistart" else grid,
                                min_items)
    if not len(n):
        return result
    errors = np.cumsum(wrong)[n - 1]
    # one start (the highest threshold), or multistart's: the first threshold reaching
    # min_items, 2 × min_items, 4 × min_items, ... items, each at δ / (their number)
    starts = [0] if grid != "multistart" else sorted(
        {int(np.searchsorted(n, min_items * 2 ** k)) for k in range(64)
         if min_items * 2 ** k <= n[-1]})
    upper = np.atleast_1d(binomial_upper(errors, n, delta / len(starts)))
    passed = upper <= 1 - target
    for start in starts:
        for k in range(start, len(n)):
            result.steps.append(SequenceStep(float(thresholds[k]), int(n[k]),
                                             int(errors[k]), float(upper[k]),
                                             bool(passed[k]), int(n[start])))
            if not passed[k]:
                break
    certified = [step for step in result.steps if step.passed]
    if certified:  # every rejected threshold holds (w.p. 1 − δ): the lowest is taken
        last = max(certified, key=lambda step: step.n)
        result.certified, result.threshold = True, last.threshold
        result.agreement_lower_bound = 1 - last.risk_upper
        result.calibration_coverage = last.n / len(labelled)
    return result


def _thresholds(confidence, grid: str, min_items: int):
    """(thresholds, items at or above each), highest threshold first, for confidences
    sorted from the highest down: only thresholds with ``min_items`` items or more."""
    import numpy as np

    if grid == "authors":
        points = np.linspace(0.0, 1.0, AUTHORS_GRID_POINTS)[::-1]
        n = np.searchsorted(-confidence, -points, side="right")  # items ≥ each point
        keep = n >= min_items
        points, n = points[keep], n[keep]
        # points with the same items are one test: the lowest of them stands for it
        last = np.flatnonzero(np.append(n[1:] != n[:-1], True))
        return points[last], n[last]
    # each distinct confidence, highest first, with the items at or above it
    last_of_value = np.flatnonzero(np.append(confidence[1:] != confidence[:-1], True))
    thresholds, n = confidence[last_of_value], last_of_value + 1
    keep = n >= min_items
    thresholds, n = thresholds[keep], n[keep]
    if grid == "coarse" and len(n):
        # the first threshold reaching each multiple of min_items, and the last
        steps = np.unique(np.searchsorted(n, np.arange(min_items, n[-1] + 1, min_items)))
        steps = np.unique(np.append(steps[steps < len(n)], len(n) - 1))
        thresholds, n = thresholds[steps], n[steps]
    return thresholds, n


def majority(verdicts: Sequence[Verdict]) -> tuple[Verdict, float] | None:
    """The most frequent verdict and the share giving it (ties between verdicts go to
    the first of a, b, tie); None for no verdict."""
    if not verdicts:
        return None
    counts = Counter(verdicts)
    top = max(VERDICTS, key=lambda v: (counts[v], -VERDICTS.index(v)))
    return top, counts[top] / len(verdicts)


def human_majority(votes: Sequence[Verdict]) -> Verdict | None:
    """The people's verdict on an item: the strict majority of their votes (None when
    the most frequent verdicts tie)."""
    if not votes:
        return None
    ranked = Counter(votes).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def verdict_probabilities(gold: dict[int, float], perturbed: dict[int, float]
                          ) -> dict[Verdict, float]:
    """P(a), P(b), P(tie) of a single-answer judge whose scores of the gold and the
    perturbed answer follow these distributions, independently (``--logprobs``)."""
    gold_total, perturbed_total = sum(gold.values()), sum(perturbed.values())
    probabilities: dict[Verdict, float] = {"a": 0.0, "b": 0.0, "tie": 0.0}
    if gold_total <= 0 or perturbed_total <= 0:
        return probabilities
    for g, pg in gold.items():
        for p, pp in perturbed.items():
            verdict: Verdict = "a" if g > p else "b" if g < p else "tie"
            probabilities[verdict] += (pg / gold_total) * (pp / perturbed_total)
    return probabilities


@dataclass
class CascadeStage:
    """One judge of a cascade, calibrated on what the judges before it left."""

    judge: str
    """The judge (its run's label)."""
    calibration: Calibration
    """Its threshold, at δ / J."""


def cascade(judges: Sequence[tuple[str, Sequence[TrustItem]]], target: float,
            delta: float, min_items: int = MIN_ITEMS, grid: str = "auto"
            ) -> list[CascadeStage]:
    """Calibrate a cascade (see the module docstring): ``judges`` cheapest first, each
    with its items (the same keys for every judge)."""
    remaining = {item.key for item in judges[0][1]}
    stages = []
    for name, items in judges:
        mine = [i for i in items if i.key in remaining]
        calibration = calibrate(mine, target, delta / len(judges), min_items, grid)
        stages.append(CascadeStage(name, calibration))
        if calibration.certified:
            remaining -= {i.key for i in mine if i.confidence >= calibration.threshold}
    return stages


def assign(judges: Sequence[tuple[str, Sequence[TrustItem]]],
           stages: Sequence[CascadeStage]) -> dict[tuple[str, str], int | None]:
    """Which judge (its index) takes each item under a calibrated cascade; None: people."""
    taken: dict[tuple[str, str], int | None] = {}
    by_judge = [{i.key: i for i in items} for _, items in judges]
    for key in by_judge[0]:
        taken[key] = None
        for index, stage in enumerate(stages):
            item = by_judge[index].get(key)
            if stage.calibration.certified and item is not None and \
                    item.confidence >= stage.calibration.threshold:
                taken[key] = index
                break
    return taken
