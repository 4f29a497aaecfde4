"""The QA robustness metrics as typed results, each field documented, and
``robustness.json`` ([`RobustnessResults`][fbi.metrics.RobustnessResults]), which is written
and read through them.

The formulas are in `fbi.metrics._qa`, with the papers' sections; these models only
say what each number is. A number that cannot be computed (a constant column, no
defined group) is None, never NaN: [`Metrics`][fbi.metrics.Metrics] turns NaN into None and numpy
scalars into Python numbers as a result is made, so every writer gets plain JSON.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, model_serializer, model_validator

from fbi.metrics._results import Share, Statistic

#: robustness.json's format. 2: every metric field is always present (None where it
#: could not be computed); 1 left out MAQA's confidence fields and the permutation
#: figures when they were not computed. Both are read.
ROBUSTNESS_SCHEMA_VERSION = 2


class Metrics(BaseModel):
    """One suite's figures: immutable, nothing but its fields, NaN read as None."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    @model_validator(mode="before")
    @classmethod
    def _plain_numbers(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        cleaned = {}
        for key, value in values.items():
            if isinstance(value, np.generic):
                value = value.item()
            if isinstance(value, float) and math.isnan(value):
                value = None
            cleaned[key] = value
        return cleaned


class MultiQAMetrics(Metrics):
    """MultiQ&A (the MultiQ&A paper, §5) over a questions × variants table: the original
    and its rephrasings, each answered once."""

    questions: int
    """Questions with every variant answered."""
    variants: int
    """Variants per question (the original first)."""
    dropped_incomplete: int = 0
    """Questions left out because a variant was not answered usably."""
    base_accuracy: Share
    """Accuracy on the original questions."""
    mean_accuracy: Share
    """Accuracy over every variant."""
    mode_accuracy: Share
    """Accuracy of each question's most frequent answer."""
    worst_case: Share
    """Share of questions answered right in every variant."""
    best_case: Share
    """Share answered right in at least one variant."""
    item_difficulty: Share
    """μ_D: mean over questions of the share of variants answered right."""
    certainty: Statistic
    """H_η: 1 − the normalised entropy of each question's answers, averaged."""
    gibbs_m2: Statistic
    """Gibbs' M2: 1 − the normalised variation of each question's answers, averaged."""
    fleiss_kappa: Statistic
    """Fleiss' κ, the variants as raters and the distinct answers as categories."""
    fleiss_kappa_relabelled: Statistic
    """Fleiss' κ over labels remapped by first appearance in each question."""
    cronbach_alpha: Statistic
    """Cronbach's α (KR-20), the variants as items."""
    permutations: int | None = None
    """fbi's permutations of the variants within each question (None: not computed)."""
    cronbach_alpha_permuted_mean: Statistic = None
    """Mean KR-20 α over the permutations."""
    cronbach_alpha_permuted_sd: Statistic = None
    """Its standard deviation."""
    fleiss_kappa_permuted_mean: Statistic = None
    """Mean relabelled Fleiss' κ over the permutations."""
    fleiss_kappa_permuted_sd: Statistic = None
    """Its standard deviation."""


class NoiseMetrics(Metrics):
    """One kind of natural noise (the non-adversarial robustness paper, §3): paired
    correctness before and after, pooled over the questions."""

    questions: int
    """Questions answered in both forms."""
    accuracy_original: Share
    """Accuracy on the originals."""
    accuracy_perturbed: Share
    """Accuracy on the noisy forms."""
    pdr: Statistic
    """Performance drop rate, (original − noisy) / original (None: original 0)."""
    cohens_h: Statistic
    """Cohen's h, 2·asin√noisy − 2·asin√original."""
    h_over_pi: Statistic
    """h / π, in [−1, 1]."""
    abs_h: Statistic
    """|h|."""
    effect: str
    """h in words (Cohen's thresholds)."""
    h_ci_low: Statistic
    """h's 95% paired bootstrap interval, low end."""
    h_ci_high: Statistic
    """High end."""
    ci_method: str | None
    """``BCa``, ``percentile`` or ``degenerate`` (None: too few questions)."""


class NoiseGroupMetrics(Metrics):
    """The noise paper's group scores: per question group (an original and its noisy
    forms), PDR and h, then their means over groups with 95% bootstrap intervals."""

    groups: int
    """Groups with the original and at least one noisy form answered."""
    groups_incomplete: int
    """Groups left out."""
    pdr_undefined_groups: int
    """Groups whose PDR is undefined (original wrong, a noisy form right)."""
    accuracy_original: Share = None
    """Mean accuracy on the originals."""
    accuracy_perturbed: Share = None
    """Mean accuracy on the noisy forms."""
    pdr: Statistic = None
    """Mean PDR over the groups where it is defined."""
    pdr_ci_low: Statistic = None
    """Its 95% interval, low end."""
    pdr_ci_high: Statistic = None
    """High end."""
    pdr_ci_method: str | None = None
    """``BCa``, ``percentile`` or ``degenerate``."""
    cohens_h: Statistic = None
    """Mean Cohen's h."""
    cohens_h_ci_low: Statistic = None
    """Its 95% interval, low end."""
    cohens_h_ci_high: Statistic = None
    """High end."""
    cohens_h_ci_method: str | None = None
    """``BCa``, ``percentile`` or ``degenerate``."""
    h_over_pi: Statistic = None
    """Mean h / π."""
    h_over_pi_ci_low: Statistic = None
    """Its 95% interval, low end."""
    h_over_pi_ci_high: Statistic = None
    """High end."""
    h_over_pi_ci_method: str | None = None
    """``BCa``, ``percentile`` or ``degenerate``."""
    abs_h: Statistic = None
    """Mean |h|."""
    abs_h_ci_low: Statistic = None
    """Its 95% interval, low end."""
    abs_h_ci_high: Statistic = None
    """High end."""
    abs_h_ci_method: str | None = None
    """``BCa``, ``percentile`` or ``degenerate``."""
    effect: str | None = None
    """Mean h in words."""


class NoiseSuite(Metrics):
    """The natural-noise suite: the group scores and each kind of noise on its own."""

    groups: NoiseGroupMetrics
    """Over question groups."""
    by_noise: dict[str, NoiseMetrics]
    """Per kind of noise."""


class RetestMetrics(Metrics):
    """MMLU answer-order shuffles: the original order against shuffled ones (test-retest)."""

    questions: int
    """Questions answered in every order."""
    shuffles: int
    """Shuffled orders per question."""
    dropped_incomplete: int = 0
    """Questions left out because an order was not answered usably."""
    accuracy: Share
    """Accuracy in the original order."""
    test_retest_accuracy: Share
    """Share right in the original order and in a shuffle, averaged over shuffles."""
    percent_drop: Statistic
    """100 × (accuracy − test-retest) / accuracy (None: accuracy 0)."""


class MAQAMetrics(Metrics):
    """MAQA: questions with several right answers, each answer sampled several times."""

    questions: int
    """Questions."""
    samples: int
    """Answers sampled, over every question."""
    accuracy: Share
    """Share of answers judged right."""
    consistency: Statistic
    """Per question, the share of agreeing pairs among its sampled answers, averaged."""
    precision: Share = None
    """Mean precision of the answer set against the gold set."""
    recall: Share = None
    """Mean recall."""
    f1: Share = None
    """Mean F1."""
    verbalised_confidence: Share = None
    """Mean confidence the model stated (None: not asked)."""
    auroc_verbalised: Statistic = None
    """AUROC of stated confidence for telling right answers from wrong."""
    auroc_max_softmax: Statistic = None
    """AUROC of the chosen tokens' mean probability (None: no log-probabilities)."""
    auroc_margin: Statistic = None
    """AUROC of the lead over the runner-up token."""
    auroc_neg_entropy: Statistic = None
    """AUROC of minus the entropy of the top tokens."""


class SuiteResults(BaseModel):
    """The suites that gave metrics; the others are absent (and listed as failed or
    skipped beside)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    multiqa: MultiQAMetrics | None = None
    """MultiQ&A: rephrasings."""
    noise: NoiseSuite | None = None
    """Natural noise."""
    shuffle: RetestMetrics | None = None
    """Answer order."""
    maqa: MAQAMetrics | None = None
    """Multi-answer questions."""

    @model_serializer(mode="wrap")
    def _present_only(self, handler):
        return {name: value for name, value in handler(self).items() if value is not None}


class RobustnessResults(BaseModel):
    """``robustness.json``: every suite's metrics of one run (or answers table)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    schema_version: Literal[1, 2] = ROBUSTNESS_SCHEMA_VERSION
    """robustness.json's format."""
    answers: int
    """Answers scored."""
    unusable_answers: int
    """Answers with no usable content."""
    suites: SuiteResults
    """Per suite, its metrics (docs/how-to/robustness.md)."""
    failed_suites: dict[str, str]
    """Suites that gave no metric, with why."""
    skipped_suites: dict[str, str]
    """Suites with no question of their kind, with why."""
    model: str | None = None
    """The model answered."""
    dataset: str | None = None
    """The QA items."""
    rewrites: dict[str, int] | None = None
    """MultiQ&A rewrites asked and usable."""
    source: str | None = None
    """The answers table scored, for ``fbi robustness score``."""
