"""What `fbi trust` writes (``trust.json``) and what `fbi report` certifies: typed, each
field said. Version 1."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fbi.trust._calibration import SequenceStep
from fbi.trust._ppi import Estimate

TRUST_SCHEMA_VERSION = 1

Confidence = Literal["samples", "logprob", "jury"]


class CascadeJudge(BaseModel):
    """One judge of a cascade, as trust.json shows it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    judge: str
    """The run's label."""
    certified: bool
    """Whether this judge certified a threshold (at δ / number of judges)."""
    threshold: float | None
    """Its threshold."""
    agreement_lower_bound: float | None
    """The agreement certified on the items it takes."""
    share: float
    """Share of all items it takes."""
    cost_per_item: float | None
    """Its mean cost per item (USD), from its run."""


class PlanRow(BaseModel):
    """How many more human labels a goal needs, by the run's own figures."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    goal: str
    """What the labels are for, in words."""
    where: str
    """Which items to label: a category, a confidence band, or all."""
    labelled: int
    """Labelled items there now."""
    needed: int | None
    """Labelled items the goal needs in all (None: not reachable at the current rate)."""
    more: int | None
    """How many more to label."""


class TrustResult(BaseModel):
    """Selective judging for one judge (or jury, or cascade) under one strategy."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    judge: str
    """The judge: a run's label, ``jury: A, B, C`` or ``cascade: A → B``."""
    strategy: str
    """The strategy."""
    confidence: Confidence
    """The confidence signal: samples agreement, logprob verdict probability, jury
    agreement."""
    target: float
    """The agreement asked for."""
    delta: float
    """The guarantee holds with probability at least 1 − delta."""
    certified: bool
    """Whether a threshold was certified."""
    threshold: float | None
    """The confidence threshold λ̂ (a cascade: its first judge's)."""
    coverage: float | None
    """Share of all judged items (labelled or not) the judge takes without a person."""
    agreement_lower_bound: float | None
    """1 − R⁺ at the threshold (a cascade: the least of its stages'): a description, not
    a guarantee; what is certified is agreement ≥ the target."""
    n_calibration: int
    """Labelled items calibrated on."""
    n_test: int
    """Labelled items held out to check it."""
    test_agreement: float | None
    """Agreement with people on the held-out items the judge takes."""
    test_coverage: float | None
    """Share of the held-out items it takes."""
    failure: str = ""
    """What fails when nothing is certified."""
    steps: list[SequenceStep] = Field(default_factory=list)
    """Every threshold the fixed sequence tried, in order (a cascade: its first judge's)."""
    grid: str = "distinct"
    """Which thresholds the sequence tried: ``multistart``, ``coarse``, ``distinct`` or
    ``authors`` (`fbi.trust.calibrate`; ``auto`` resolved)."""
    stages: list[CascadeJudge] = Field(default_factory=list)
    """A cascade's judges, cheapest first."""
    cost_per_item: float | None = None
    """Mean cost per item of judging this way (a cascade: every judge consulted)."""
    strongest_cost_per_item: float | None = None
    """A cascade: the last (strongest) judge's mean cost per item alone."""
    cost_saved: float | None = None
    """A cascade: the share of the strongest judge's cost saved."""
    sentence: str = ""
    """What the figures allow, in one sentence."""


class CorrectedEstimate(BaseModel):
    """A quantity over all judged items, estimated from the judge's labels of all and the
    people's of a part."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    judge: str
    """The run's label."""
    strategy: str
    """The strategy."""
    quantity: str
    """``preference rate`` (share where the gold / first answer is better) or ``mean
    score of the perturbed answer``."""
    n_labelled: int
    """Items people labelled."""
    n_unlabelled: int
    """Items only the judge labelled."""
    judge_only: Estimate
    """The judge's labels alone (biased by its errors; a share: Wilson's interval)."""
    human_only: Estimate
    """The people's labels alone (a share: Wilson's interval)."""
    ppi: Estimate
    """Prediction-powered inference (PPI++)."""
    ppi_lambda: float | None
    """PPI++'s power-tuning λ (1: plain PPI, 0: people alone)."""
    effective_labels: float | None
    """How many human labels the people alone would need for the PPI interval's width
    (from the normal intervals of both: n × (their width ratio)²)."""
    plug_in: Estimate | None = None
    """The preference rate's bias-adjusted plug-in estimate (arXiv 2511.21140)."""
    sensitivity: float | None = None
    """The judge's sensitivity on the labelled items (plug-in)."""
    specificity: float | None = None
    """Its specificity (plug-in)."""


class TrustReport(BaseModel):
    """``trust.json``."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    schema_version: Literal[1] = TRUST_SCHEMA_VERSION
    """1."""
    fbi_version: str
    """The fbi that wrote it."""
    human: str
    """The human labels file."""
    split: str
    """How labelled items were split into calibration and test, in words."""
    results: list[TrustResult]
    """Per judge (or jury, or cascade) × strategy."""
    estimates: list[CorrectedEstimate]
    """Corrected estimates per judge × strategy."""
    plan: list[PlanRow]
    """The labelling planner's rows."""
    notes: list[str] = Field(default_factory=list)
    """What was left out, and why."""


class BlindSpot(BaseModel):
    """A category (or hunt finding) the judge misses more often than not — or the
    score-invariant rewrites, when it penalises harmless rewrites more often than not."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    name: str
    """The category, or the hunt finding's name."""
    source: Literal["category", "hunt", "score-invariant"]
    """Where it comes from."""
    rate: float
    """Its undetected (miss) rate; for score-invariant rewrites, the share penalised."""
    low: float | None
    """The rate's 95% interval, lower end."""
    high: float | None
    """Upper end."""


class Certificate(BaseModel):
    """What `fbi report --human` certifies for one judge × strategy."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    judge: str
    """The run's label."""
    strategy: str
    """The strategy."""
    trust: TrustResult | None
    """The selective-judging result (None without a confidence signal)."""
    blind_spots: list[BlindSpot]
    """Categories whose miss rate's interval lies above one half, worst first."""
    undecided: list[BlindSpot] = Field(default_factory=list)
    """Categories missed more often than not whose interval still reaches one half: too
    few instances to tell whether they are blind spots (never "none found")."""
    cost_per_1000: float | None
    """USD per 1,000 judgments (calls), from the run."""
    sentence: str
    """What the figures allow, in one sentence; nothing is claimed they do not support."""
