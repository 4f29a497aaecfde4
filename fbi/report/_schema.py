"""The report's summary as typed, versioned records: what ``summary.json`` holds.

Every section is a list of rows of one model; the renderers (terminal, Markdown, HTML,
CSV) read their attributes, and ``fbi report`` reads the file it wrote back through
:class:`Summary` before it reports success, so a summary that does not match its schema
is never left behind unnoticed. The fields are described in
docs/reference/report-files.md; each field's docstring here is the short form.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from fbi.metrics import GroupRate as RateRow
from fbi.metrics import JudgeStrategy, Row
from fbi.metrics import PairwiseBreakdown as PairwiseRow
from fbi.metrics import ReferenceHistogram as ReferenceRow

#: summary.json's format. 2: comparisons name both sides' strategies (``strategy_b``,
#: ``named``). The rows have not changed shape since; the models only type them.
SUMMARY_SCHEMA_VERSION = 2

Rate = float | None  # a share; None where nothing could be counted


class RunEntry(Row):
    folder: str
    """The run folder."""
    label: str
    """The name the report gives the run."""
    judge: str
    """The judge model."""
    strategies: dict[str, Any]
    """Per strategy, as ``run.json`` records it: version, score range, template hash."""
    dataset: dict[str, Any]
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


class ComparisonRow(Row):
    judge_a: str
    """Side A's run label."""
    judge_b: str
    """Side B's run label."""
    strategy: str
    """Side A's strategy."""
    strategy_b: str
    """Side B's strategy (the same unless the pair was named)."""
    named: bool
    """Named with ``--compare``."""
    level: str
    """``category``, ``ability`` or ``overall``."""
    group: str
    """The category, ability or ``all``."""
    n: int
    """Instances both sides judged readably."""
    missed_a: int
    """Errors A missed."""
    missed_b: int
    """Errors B missed."""
    rate_a: Rate
    """A's undetected rate over the shared instances."""
    rate_b: Rate
    """B's undetected rate over the shared instances."""
    missed_by_a_only: int
    """Discordant pairs: missed by A alone."""
    missed_by_b_only: int
    """Discordant pairs: missed by B alone."""
    p: Rate
    """Exact McNemar p."""
    p_adjusted: Rate
    """Holm-adjusted across the pair's groups."""
    significant: bool
    """Adjusted p below 0.05."""


class RankingRow(Row):
    kind: Literal["judges", "strategies"]
    """Two judges under one strategy, or one judge's two strategies."""
    judge_a: str
    """Side A's run label."""
    strategy_a: str
    """Side A's strategy."""
    judge_b: str
    """Side B's run label."""
    strategy_b: str
    """Side B's strategy."""
    categories: int
    """Categories ranked (both sides judged them)."""
    instances: int
    """Instances both judged readably in them."""
    fewest_per_category: int
    """The fewest such instances in a category (below 5: no interval)."""
    tau: Rate
    """Kendall's τ-b between the two rankings by undetected rate."""
    ci_low: Rate
    """95% bootstrap interval, low end."""
    ci_high: Rate
    """95% bootstrap interval, high end."""


class ManipulationRow(JudgeStrategy):
    manipulation: str
    """The manipulation kind."""
    pairs: int
    """Manipulated instances paired with their twin, both judged readably."""
    caught_before: int
    """Errors caught in the twins."""
    missed_after: int
    """Of those, missed once manipulated."""
    caught_after_only: int
    """Caught only once manipulated."""
    missed_before_rate: Rate
    """% undetected in the twins."""
    missed_after_rate: Rate
    """% undetected once manipulated."""
    p: Rate
    """Exact McNemar p on the two discordant counts."""


class Agreement(Row):
    level: str
    """``overall``, ``ability`` or ``category``."""
    group: str
    """``all``, the ability or the category."""
    n_with_ties: int
    """Votes compared, ties included."""
    agreement_with_ties: Rate
    """Share of votes agreeing, ties included."""
    agreement_with_ties_ci_low: Rate
    """95% bootstrap interval, low end."""
    agreement_with_ties_ci_high: Rate
    """95% bootstrap interval, high end."""
    n_without_ties: int
    """Votes compared where neither side said tie."""
    agreement_without_ties: Rate
    """Share agreeing among those."""
    agreement_without_ties_ci_low: Rate
    """95% bootstrap interval, low end."""
    agreement_without_ties_ci_high: Rate
    """95% bootstrap interval, high end."""


class JudgeAgreement(Agreement):
    judge: str
    """The run label."""
    strategy: str
    """The strategy."""
    kappa: Rate
    """Cohen's κ over the same votes."""
    kappa_ci_low: Rate
    """95% bootstrap interval, low end."""
    kappa_ci_high: Rate
    """95% bootstrap interval, high end."""
    n_scores: int
    """Answers with a judge score and a human score."""
    spearman: Rate
    """Spearman's ρ against the mean human score."""
    spearman_ci_low: Rate
    """95% bootstrap interval, low end."""
    spearman_ci_high: Rate
    """95% bootstrap interval, high end."""
    kendall: Rate
    """Kendall's τ-b against the mean human score."""
    kendall_ci_low: Rate
    """95% bootstrap interval, low end."""
    kendall_ci_high: Rate
    """95% bootstrap interval, high end."""
    interval_note: str | None
    """Why an interval is missing, when one is."""


class HumanAgreement(Row):
    judge: list[JudgeAgreement]
    """Each judge × strategy against the people, per group."""
    humans: list[Agreement]
    """The people against each other (the ceiling), per group."""


class LeaderboardRow(JudgeStrategy):
    paradigm: str
    """``single``, ``pairwise`` or ``reference``."""
    rank: int | None
    """Standard competition rank by overall rate (None: no readable verdict)."""
    rate: Rate
    """Overall undetected rate."""
    ci_low: Rate
    """Its 95% interval, low end."""
    ci_high: Rate
    """Its 95% interval, high end."""
    instances: int | None
    """Instances in the overall group."""
    LF: Rate = None
    """Long-form rate."""
    F: Rate = None
    """Factual rate."""
    IF: Rate = None
    """Instruction-following rate."""
    R: Rate = None
    """Reasoning rate."""
    Pref: Rate = None
    """Preference-set error rate."""
    SI_retained: Rate = None
    """Score-invariant edits retained."""
    unparseable_share: Rate
    """Share of unreadable verdicts."""
    flip_rate: Rate = None
    """Pairwise: share of pairs whose verdict changes with the order."""
    judgments: int
    """Judgments that reached the judge."""
    cost_per_1000: Rate
    """USD per 1,000 judgments (None: a price is unknown)."""
    seconds_per_1000: Rate
    """Model seconds per 1,000 judgments (cached replies count as free)."""


class RepeatabilityRow(JudgeStrategy):
    samples: int
    """``--samples K``."""
    instances: int
    """Instances readable in every sample."""
    changed_share: Rate
    """Share whose outcome differs between samples."""
    fleiss_kappa: Rate
    """Fleiss' κ with the samples as raters."""
    sample_rates: list[Rate]
    """Each sample's undetected rate."""
    rate_mean: Rate
    """Their mean."""
    rate_min: Rate
    """Their lowest."""
    rate_max: Rate
    """Their highest."""


class WeightedRow(JudgeStrategy):
    instances: int
    """Error instances with both scores."""
    si_instances: int
    """Score-invariant instances with both scores."""
    without_weights: int
    """Instances with no expected score."""
    sampled_rate: Rate
    """Undetected rate under the sampled score."""
    sampled_ci_low: Rate
    """Its Wilson interval, low end."""
    sampled_ci_high: Rate
    """Its Wilson interval, high end."""
    sampled_ties: int
    """Ties under the sampled score."""
    sampled_si_retained: Rate
    """SI retained under the sampled score."""
    expected_rate: Rate
    """Undetected rate under the expected (G-Eval) score."""
    expected_ci_low: Rate
    """Its Wilson interval, low end."""
    expected_ci_high: Rate
    """Its Wilson interval, high end."""
    expected_ties: int
    """Ties under the expected score."""
    expected_si_retained: Rate
    """SI retained under the expected score."""


class BandRate(JudgeStrategy):
    n: int
    """Readable error instances."""
    undetected: int
    """Of them, missed."""
    rate: Rate
    """Undetected rate."""
    ci_low: Rate
    """Wilson 95% interval, low end."""
    ci_high: Rate
    """Wilson 95% interval, high end."""


class LengthBiasRow(BandRate):
    band: str
    """``shorter`` (< 0.9×), ``about equal`` or ``longer`` (> 1.1×) than the gold."""


class SelfPreferenceRow(BandRate):
    same_family: bool
    """Gold answers written by the judge's own model family."""
    judge_family: str
    """The judge's family, read from its model name."""


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
    share: Rate
    """detected_in_explanation_only over the readable checks."""


class JudgeStabilityRow(JudgeStrategy):
    paradigm: str
    """``single`` or ``pairwise``."""
    gold_accepted: Rate = None
    """Single: share of gold answers scored at or above the middle."""
    si_accepted: Rate = None
    """Single: share of score-invariant rewrites so scored."""
    n_gold: int | None = None
    """Single: gold answers scored."""
    n_si: int | None = None
    """Single: rewrites scored."""
    cohens_h: Rate = None
    """Single: Cohen's h between the two acceptance rates."""
    effect: str | None = None
    """Single: h in words."""
    pairs: int | None = None
    """Pairwise: pairs judged in both orders."""
    gold_chosen_gold_first: Rate = None
    """Pairwise: gold chosen when shown first."""
    gold_chosen_both_orders: Rate = None
    """Pairwise: gold chosen in both orders (test-retest)."""
    percent_drop: Rate = None
    """Pairwise: the drop from the one to the other, %."""


class RobustnessEntry(BaseModel):
    """A robustness run's ``robustness.json`` as the report shows it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    folder: str
    """The run folder."""
    schema_version: int
    """robustness.json's format."""
    answers: int
    """Answers scored."""
    unusable_answers: int
    """Answers with no usable content."""
    suites: dict[str, dict[str, Any]]
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


class Summary(BaseModel):
    """Everything ``fbi report`` computed from the run folders: ``summary.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    schema_version: Literal[2] = SUMMARY_SCHEMA_VERSION
    """This format's version."""
    fbi_version: str
    """The fbi that wrote it."""
    generated_at: str
    """When, UTC, ISO 8601."""
    convention: Literal["fbi", "paper"]
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
