"""The report's summary as typed, versioned records: what ``summary.json`` holds.

Every section is a list of rows of one model; the renderers (terminal, Markdown, HTML, CSV)
read their attributes, and ``fbi report`` reads the file it wrote back through
[`Summary`][fbi.report.Summary] before it reports success, so a summary that does not match
its schema is never left behind unnoticed. The fields are described in
docs/reference/report-files.md; each field's docstring here is the short form.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fbi.metrics import (
    BestOfNComparison,
    BestOfNRow,
    ComparisonRow,
    HumanAgreement,
    JudgeStabilityRow,
    JudgeStrategy,
    LeaderboardRow,
    LengthBiasRow,
    ManipulationRow,
    RankingRow,
    RepeatabilityRow,
    RobustnessResults,
    Row,
    SelfPreferenceRow,
    Share,
    StepRow,
    TiesScore,
    WeightedRow,
)
from fbi.metrics import GroupRate as RateRow
from fbi.metrics import PairwiseBreakdown as PairwiseRow
from fbi.metrics import ReferenceHistogram as ReferenceRow
from fbi.run_spec import DatasetRecord, PromptRecord
from fbi.trust import Certificate

#: summary.json's format. 2: comparisons name both sides' strategies (``strategy_b``,
#: ``named``). The rows have not changed shape since; the models only type them.
SUMMARY_SCHEMA_VERSION = 2


class RunEntry(Row):
    folder: str
    """The run folder."""
    label: str
    """The name the report gives the run."""
    judge: str
    """The judge model."""
    strategies: dict[str, PromptRecord]
    """Per strategy, as ``run.json`` records it: version, score range, template hash."""
    dataset: DatasetRecord
    """The dataset: spec, fingerprint, instance count."""
    protocol: str = "fbi"
    """What was sent: ``fbi`` or ``paper``."""
    judgments: int
    """Judgments read from the folder."""


class CoverageRow(Row):
    folder: str
    """The run folder with missing judgments."""
    label: str
    """Its label."""
    strategy: str
    """The strategy with missing judgments."""
    instances: int
    """Instances in the run's dataset."""
    missing: int
    """Instances without a judgment."""
    first_call_ids: list[str]
    """The first call ids to make (``INSTANCE|STRATEGY|ROLE``)."""


class Bias(Row):
    length: list[LengthBiasRow]
    """Undetected rate by the perturbed answer's length against the gold's."""
    self_preference: list[SelfPreferenceRow]
    """Undetected rate on gold answers of the judge's family and the rest."""


class ExplanationCheckRow(JudgeStrategy):
    group: str
    """The category or ``all``."""
    undetected_checked: int
    """Undetected instances whose explanation was checked."""
    detected_in_explanation_only: int
    """Of them, the explanation named the error (paper §5.3)."""
    unparseable: int
    """The checker's answer unreadable."""
    share: Share
    """detected_in_explanation_only over the readable checks."""


class BestOfN(Row):
    """Best-of-N sets (RewardBench 2's layout) ranked row by row
    ([`fbi.metrics.best_of_n`][fbi.metrics.best_of_n]); empty without such rows."""

    accuracy: list[BestOfNRow] = []
    """Per judge × strategy × subset (and ``all``)."""
    ties: list[TiesScore] = []
    """RewardBench 2's Ties score, per single-answer judge × strategy."""
    comparisons: list[BestOfNComparison] = []
    """Paired tests of two judges under one strategy."""


class RobustnessEntry(RobustnessResults):
    """A robustness run's ``robustness.json`` as the report shows it: with its folder."""

    folder: str
    """The run folder."""


class Summary(BaseModel):
    """Everything ``fbi report`` computed from the run folders: ``summary.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    schema_version: Literal[2] = SUMMARY_SCHEMA_VERSION
    """This format's version."""
    fbi_version: str
    """The fbi that wrote it."""
    generated_at: str
    """When, UTC, ISO 8601."""
    convention: Literal["fbi", "paper", "authors"]
    """Which rate the tables show."""
    coverage: list[CoverageRow]
    """Runs × strategies with missing judgments."""
    robustness: list[RobustnessEntry]
    """Robustness runs reported beside the judges."""
    judge_stability: list[JudgeStabilityRow]
    """The judge's own stability: SI acceptance (Cohen's h) and position swaps."""
    problems: list[str]
    """What could not be read, with file and line."""
    runs: list[RunEntry]
    """The judge runs reported."""
    rates: list[RateRow]
    """Every rate, per judge × strategy × group."""
    comparisons: list[ComparisonRow]
    """Paired tests of two judges (or named sides)."""
    ranking_stability: list[RankingRow]
    """Whether two sides agree on which errors are hardest."""
    manipulation: list[ManipulationRow]
    """Each manipulation's effect against its twin."""
    master_keys: list[RateRow] = []
    """The master-key suite's false-positive rates, per judge × strategy × key family."""
    trail: list[RateRow] = []
    """Agents' trajectories by TRAIL's taxonomy, per judge × strategy × class."""
    steps: list[StepRow] = []
    """Step-level judges of agents' trajectories: where they put the error."""
    human_agreement: HumanAgreement | None
    """With ``--human``: the judges against people's labels."""
    leaderboard: list[LeaderboardRow]
    """Judge × strategy ranked by overall undetected rate."""
    repeatability: list[RepeatabilityRow]
    """With ``--samples K``: how outcomes change between samples."""
    weighted_scores: list[WeightedRow]
    """With ``--logprobs``: sampled against probability-weighted scores."""
    bias: Bias
    """Length and self-preference diagnostics."""
    pairwise: list[PairwiseRow]
    """Pairwise outcome classes over both orders."""
    reference: list[ReferenceRow]
    """Reference-guided score histograms (paper Table 16)."""
    explanation_check: list[ExplanationCheckRow]
    """Errors named in the explanation though the score missed them."""
    display_names: dict[str, str]
    """Strategy name → the paper's name."""
    best_of_n: BestOfN = BestOfN()
    """Best-of-N rows: accuracy, chance, the Ties score, paired tests."""
    certificates: list[Certificate] = []
    """With human labels: per judge × strategy, what the figures allow (certified
    agreement and coverage, blind spots, cost, a sentence)."""
