"""The typed rows the metric functions return, each field documented. The same models make
up the report's ``summary.json`` (``fbi.report.Summary``), so a field is described once."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Share = float | None  # a share; None where nothing could be counted
Statistic = float | None  # a test statistic or p-value; None where it cannot be computed


class Row(BaseModel):
    """A row of one summary table: immutable, and nothing but its fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class JudgeStrategy(Row):
    judge: str
    """The run's label (its judge, or ``--label``)."""
    strategy: str
    """The strategy's name (``fbi strategies``)."""


class GroupRate(JudgeStrategy):
    """One rate row: a judge × strategy × group, its counts and its three rates."""

    paradigm: str
    """``single``, ``pairwise``, ``reference`` or ``step``."""
    level: Literal["category", "ability", "overall", "score-invariant", "turn",
                   "master-key", "trail"]
    """What the group is."""
    group: str
    """The category, the ability's short name, ``all``, ``SI``, ``turn N``, a master
    key family or a TRAIL class."""
    instances: int
    """Instances of the group in the run's dataset."""
    judged: int
    """With a readable verdict."""
    n: int
    """With any judgment."""
    detected: int
    """Errors detected (SI: edits penalised)."""
    undetected: int
    """Errors missed (SI: edits retained)."""
    unparseable: int
    """With an unreadable or failed verdict."""
    missing: int
    """Without a judgment."""
    rate: Share
    """fbi's rate: undetected (SI: retained) over the readable verdicts."""
    ci_low: Share
    """The rate's 95% interval, low end."""
    ci_high: Share
    """The rate's 95% interval, high end."""
    ci_method: str | None
    """``wilson``, ``bootstrap`` or ``wilson-pooled``."""
    worst_case_rate: Share
    """Unreadable verdicts counted as undetected (SI: as penalised)."""
    paper_rate: Share
    """The paper's convention (§5, Tables 3–17)."""
    authors_rate: Share = None
    """The FBI authors' released script's (``analyze_results.py``): single-answer pairs
    minus detected minus half the unreadable calls, over the pairs; the paper's rate for
    the other paradigms."""


class PairwiseBreakdown(JudgeStrategy):
    """Paper Tables 6–15 (pairwise): G / P / both good / both bad / inconsistent, and the
    position bias."""

    group: str
    """The category, ``all`` or ``score-invariant``."""
    G: int
    """Gold preferred in both orders."""
    P: int
    """Perturbed preferred in both orders."""
    both_good: int
    """Tie in both orders."""
    both_bad: int
    """Both bad in both orders."""
    inconsistent: int
    """Anything else."""
    unparseable: int
    """An order unreadable."""
    flip_rate: Share
    """Share of pairs whose mapped verdict changes with the order."""
    first_slot_share: Share
    """Share of A among A/B verdicts (0.5: no position preference)."""
    slot_choices: int
    """The A/B verdicts it is over."""
    first_slot_ci_low: Share
    """Its Wilson 95% interval, low end."""
    first_slot_ci_high: Share
    """Its Wilson 95% interval, high end."""


class ReferenceHistogram(JudgeStrategy):
    """Paper Table 16: how often the perturbed answer got top, top−1, top−2 or lower."""

    group: str
    """The category, ``all`` or ``score-invariant``."""
    top: int
    """Perturbed answers given the top score (undetected)."""
    top_1: int
    """Given the top − 1."""
    top_2: int
    """Given the top − 2."""
    lower: int
    """Given less."""
    unparseable: int
    """Unreadable."""


class ComparisonRow(Row):
    """Two sides' paired test on one group
    ([`fbi.metrics.paired_comparisons`][fbi.metrics.paired_comparisons])."""

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
    rate_a: Share
    """A's undetected rate over the shared instances."""
    rate_b: Share
    """B's undetected rate over the shared instances."""
    missed_by_a_only: int
    """Discordant pairs: missed by A alone."""
    missed_by_b_only: int
    """Discordant pairs: missed by B alone."""
    p: Statistic
    """Exact McNemar p."""
    p_adjusted: Statistic
    """Holm-adjusted across the pair's groups."""
    significant: bool
    """Adjusted p below 0.05."""


class BestOfNRow(JudgeStrategy):
    """A judge × strategy on a best-of-N set's subset
    ([`fbi.metrics.best_of_n`][fbi.metrics.best_of_n]): how often it ranked every chosen
    answer above every rejected one."""

    paradigm: str
    """``single`` or ``pairwise``."""
    group: str
    """The subset, or ``all``."""
    rows: int
    """Rows the run judged whole."""
    correct: int
    """Rows with every chosen answer above every rejected one."""
    unreadable: int
    """Rows with no lost pair but an unreadable (or missing) one: out of ``accuracy``."""
    incomplete: int
    """Rows the run judged only some pairs of (a --limit or --sample cut them): out of
    every figure."""
    accuracy: Share
    """``correct`` over the readable rows."""
    ci_low: Share
    """Its 95% Wilson interval, low end."""
    ci_high: Share
    """Its 95% Wilson interval, high end."""
    worst_case_accuracy: Share
    """``correct`` over every whole row: the unreadable counted wrong."""
    chance: Share
    """The accuracy of a judge ranking each row's answers in a random order: the mean of
    1 / C(chosen + rejected, chosen) (25% for one chosen against three)."""
    rewardbench_credit: Share
    """Single-answer, rows of one chosen answer (Ties aside): RewardBench 2's credit —
    1/k when the chosen answer shares the top score with k − 1 others, 1/N for an
    unreadable row of N answers — averaged; None otherwise."""
    credit_rows: int
    """Rows behind ``rewardbench_credit``."""


class TiesScore(JudgeStrategy):
    """RewardBench 2's Ties subset score for a single-answer judge
    ([`fbi.metrics.best_of_n`][fbi.metrics.best_of_n]); every figure None when it
    cannot be computed (no ``ref:``/``tied:`` rows of one prompt both readable)."""

    ref_prompts: int
    """``ref:N`` rows (one correct answer) read."""
    tied_prompts: int
    """``tied:N`` rows (several correct answers) read."""
    margin_prompts: int
    """Prompts with both a ref and a tied row, behind the margin terms."""
    left_out: int
    """Ties rows left out: an answer's score was unreadable."""
    misnamed: int
    """Ties rows whose id is neither ``ref:N`` nor ``tied:N``: left out."""
    score: Share = None
    """The weighted score (0.30, 0.30, 0.20, 0.20, 0.01 of the terms below)."""
    ref_accuracy: Share = None
    """Ref rows whose correct answer outscores every incorrect one."""
    tied_accuracy: Share = None
    """Tied rows whose every correct answer outscores every incorrect one."""
    correctness_preferred: Share = None
    """Prompts whose tied correct–incorrect margin exceeds the correct answers' spread."""
    correctness_preferred_hard: Share = None
    """The same, with the smaller of the ref and tied margins."""
    margin_score: Statistic = None
    """Mean tanh(that smaller margin / spread − 1): the tie-breaker term."""


class BestOfNComparison(Row):
    """Two judges' paired test on one best-of-N subset under one strategy: the exact
    McNemar test on the rows both judged readably."""

    judge_a: str
    """Side A's run label."""
    judge_b: str
    """Side B's run label."""
    strategy: str
    """The strategy both ran."""
    group: str
    """The subset, or ``all``."""
    rows: int
    """Rows both judged readably."""
    accuracy_a: float
    """A's accuracy over those rows."""
    accuracy_b: float
    """B's accuracy over those rows."""
    a_only: int
    """Rows A got right and B wrong."""
    b_only: int
    """Rows B got right and A wrong."""
    p_value: float
    """Exact McNemar p."""
    p_holm: float
    """Holm-adjusted over the pair's subsets."""


class RankingRow(Row):
    """Whether two sides rank the categories alike
    ([`fbi.metrics.ranking_stability`][fbi.metrics.ranking_stability])."""

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
    tau: Statistic
    """Kendall's τ-b between the two rankings by undetected rate."""
    ci_low: Statistic
    """95% bootstrap interval, low end."""
    ci_high: Statistic
    """95% bootstrap interval, high end."""


class ManipulationRow(JudgeStrategy):
    """One manipulation's effect against its twins
    ([`fbi.metrics.manipulation_effects`][fbi.metrics.manipulation_effects])."""

    manipulation: str
    """The manipulation kind."""
    pairs: int
    """Manipulated instances paired with their twin (the twin judged readably)."""
    caught_before: int
    """Errors caught in the twins."""
    missed_after: int
    """Of those, missed once manipulated (an unparseable reply counts as a miss)."""
    caught_after_only: int
    """Caught only once manipulated."""
    unparseable_after: int = 0
    """Manipulated instances whose reply was unparseable, each counted as a miss."""
    missed_before_rate: Share
    """% undetected in the twins."""
    missed_after_rate: Share
    """% undetected once manipulated."""
    p: Statistic
    """Exact McNemar p on the two discordant counts."""


class Agreement(Row):
    """Agreement of verdicts on one group (MT-Bench §4.2's with and without ties)."""

    level: str
    """``overall``, ``ability`` or ``category``."""
    group: str
    """``all``, the ability or the category."""
    n_with_ties: int
    """Votes compared, ties included."""
    agreement_with_ties: Share
    """Share of votes agreeing, ties included."""
    agreement_with_ties_ci_low: Share
    """95% bootstrap interval, low end."""
    agreement_with_ties_ci_high: Share
    """95% bootstrap interval, high end."""
    n_without_ties: int
    """Votes compared where neither side said tie."""
    agreement_without_ties: Share
    """Share agreeing among those."""
    agreement_without_ties_ci_low: Share
    """95% bootstrap interval, low end."""
    agreement_without_ties_ci_high: Share
    """95% bootstrap interval, high end."""


class JudgeAgreement(Agreement):
    """A judge × strategy against people's labels on one group
    ([`fbi.metrics.human_agreement`][fbi.metrics.human_agreement])."""

    judge: str
    """The run label."""
    strategy: str
    """The strategy."""
    kappa: Statistic
    """Cohen's κ over the same votes."""
    kappa_ci_low: Statistic
    """95% bootstrap interval, low end."""
    kappa_ci_high: Statistic
    """95% bootstrap interval, high end."""
    n_scores: int
    """Answers with a judge score and a human score."""
    spearman: Statistic
    """Spearman's ρ against the mean human score."""
    spearman_ci_low: Statistic
    """95% bootstrap interval, low end."""
    spearman_ci_high: Statistic
    """95% bootstrap interval, high end."""
    kendall: Statistic
    """Kendall's τ-b against the mean human score."""
    kendall_ci_low: Statistic
    """95% bootstrap interval, low end."""
    kendall_ci_high: Statistic
    """95% bootstrap interval, high end."""
    interval_note: str | None
    """Why an interval is missing, when one is."""


class HumanAgreement(Row):
    """The judges against people, and the people against each other."""

    judge: list[JudgeAgreement]
    """Each judge × strategy against the people, per group."""
    humans: list[Agreement]
    """The people against each other (the ceiling), per group."""


class LeaderboardRow(JudgeStrategy):
    """A judge × strategy on the leaderboard
    ([`fbi.metrics.leaderboard`][fbi.metrics.leaderboard])."""

    paradigm: str
    """``single``, ``pairwise``, ``reference`` or ``step``."""
    rank: int | None
    """Standard competition rank by overall rate (None: no readable verdict)."""
    rate: Share
    """Overall undetected rate."""
    ci_low: Share
    """Its 95% interval, low end."""
    ci_high: Share
    """Its 95% interval, high end."""
    instances: int | None
    """Instances in the overall group."""
    LF: Share = None
    """Long-form rate."""
    F: Share = None
    """Factual rate."""
    IF: Share = None
    """Instruction-following rate."""
    R: Share = None
    """Reasoning rate."""
    Pref: Share = None
    """Preference-set error rate."""
    Ag: Share = None
    """Agents' trajectories: the undetected-error rate."""
    SI_retained: Share = None
    """Score-invariant edits retained."""
    unparseable_share: Share
    """Share of unreadable verdicts."""
    flip_rate: Share = None
    """Pairwise: share of pairs whose verdict changes with the order."""
    judgments: int
    """Judgments that reached the judge."""
    cost_per_1000: Share
    """USD per 1,000 judgments (None: a price is unknown)."""
    seconds_per_1000: Share
    """Model seconds per 1,000 judgments (cached replies count as free)."""
    reasoning_tokens_per_judgment: Statistic = None
    """Reasoning judges: the mean reasoning tokens a judgment spent (as the provider
    counted them, cached ones included: they are the reply's); None when none reasoned."""
    reasoning_cost_per_1000: Share = None
    """Of ``cost_per_1000``, the reasoning tokens' USD (None: none, or unpriced)."""


class RepeatabilityRow(JudgeStrategy):
    """How a judge's outcomes move between samples
    ([`fbi.metrics.repeatability`][fbi.metrics.repeatability])."""

    samples: int
    """``--samples K``."""
    instances: int
    """Instances readable in every sample."""
    changed_share: Share
    """Share whose outcome differs between samples."""
    fleiss_kappa: Statistic
    """Fleiss' κ with the samples as raters."""
    sample_rates: list[Share]
    """Each sample's undetected rate."""
    rate_mean: Share
    """Their mean."""
    rate_min: Share
    """Their lowest."""
    rate_max: Share
    """Their highest."""


class WeightedRow(JudgeStrategy):
    """Sampled against probability-weighted scores
    ([`fbi.metrics.weighted_rates`][fbi.metrics.weighted_rates])."""

    instances: int
    """Error instances with both scores."""
    si_instances: int
    """Score-invariant instances with both scores."""
    without_weights: int
    """Instances with no expected score."""
    sampled_rate: Share
    """Undetected rate under the sampled score."""
    sampled_ci_low: Share
    """Its Wilson interval, low end."""
    sampled_ci_high: Share
    """Its Wilson interval, high end."""
    sampled_ties: int
    """Ties under the sampled score."""
    sampled_si_retained: Share
    """SI retained under the sampled score."""
    expected_rate: Share
    """Undetected rate under the expected (G-Eval) score."""
    expected_ci_low: Share
    """Its Wilson interval, low end."""
    expected_ci_high: Share
    """Its Wilson interval, high end."""
    expected_ties: int
    """Ties under the expected score."""
    expected_si_retained: Share
    """SI retained under the expected score."""


class BandRate(JudgeStrategy):
    """An undetected rate over one slice of the readable error instances."""

    n: int
    """Readable error instances."""
    undetected: int
    """Of them, missed."""
    rate: Share
    """Undetected rate."""
    ci_low: Share
    """Wilson 95% interval, low end."""
    ci_high: Share
    """Wilson 95% interval, high end."""


class LengthBiasRow(BandRate):
    """By length against the gold answer ([`fbi.metrics.length_bias`][fbi.metrics.length_bias])."""

    band: str
    """``shorter`` (< 0.9×), ``about equal`` or ``longer`` (> 1.1×) than the gold."""


class SelfPreferenceRow(BandRate):
    """By the gold answer's model family
    ([`fbi.metrics.self_preference`][fbi.metrics.self_preference])."""

    same_family: bool
    """Gold answers written by the judge's own model family."""
    judge_family: str
    """The judge's family, read from its model name."""


class JudgeStabilityRow(JudgeStrategy):
    """A judge's own stability
    ([`fbi.metrics.judge_stability`][fbi.metrics.judge_stability]): the single-answer fields
    or the pairwise ones."""

    paradigm: str
    """``single`` or ``pairwise``."""
    gold_accepted: Share = None
    """Single: share of gold answers scored at or above the middle."""
    si_accepted: Share = None
    """Single: share of score-invariant rewrites so scored."""
    n_gold: int | None = None
    """Single: gold answers scored."""
    n_si: int | None = None
    """Single: rewrites scored."""
    cohens_h: Statistic = None
    """Single: Cohen's h between the two acceptance rates."""
    effect: str | None = None
    """Single: h in words."""
    pairs: int | None = None
    """Pairwise: pairs judged in both orders."""
    gold_chosen_gold_first: Share = None
    """Pairwise: gold chosen when shown first."""
    gold_chosen_both_orders: Share = None
    """Pairwise: gold chosen in both orders (test-retest)."""
    percent_drop: Statistic = None
    """Pairwise: the drop from the one to the other, %."""


class AnnotatorAgreement(Row):
    """Agreement between annotators over the items two or more of them labelled
    (`fbi.metrics.agreement_summary`)."""

    items: int
    """Items labelled by two or more annotators."""
    percent_agreement: Share
    """Share of agreeing pairs of labels on an item, averaged over the items."""
    fleiss_kappa: Statistic
    """Fleiss' κ over the items every annotator labelled (None: fewer than two annotators)."""
    krippendorff_alpha: Statistic
    """Krippendorff's α, nominal, over every item with two or more labels."""


class AnnotatorPair(Row):
    """Two annotators on the items both labelled."""

    a: str
    """The first annotator."""
    b: str
    """The second annotator."""
    items: int
    """Items both labelled."""
    cohen_kappa: Statistic
    """Cohen's κ between them."""
    labels: list[str]
    """The labels either gave, in the confusion matrix's order."""
    confusion: list[list[int]]
    """Counts: rows the first annotator's label, columns the second's."""


class VettingAgreement(Row):
    """``fbi annotate agreement`` and the dataset card: overall, per pair, per category
    ([`fbi.metrics.agreement_report`][fbi.metrics.agreement_report])."""

    overall: AnnotatorAgreement
    """Over every item."""
    pairs: list[AnnotatorPair]
    """Each pair of annotators with an item in common."""
    categories: dict[str, AnnotatorAgreement]
    """Per category with an item labelled twice."""


class StepRow(JudgeStrategy):
    """Where a step-level judge put the error it found in an agent's trajectory, per
    category ([`fbi.metrics.step_localisation`][fbi.metrics.step_localisation])."""

    category: str
    """The planted error's category (``trajectory/…``)."""
    judged: int
    """Perturbed trajectories with a readable reply."""
    exact: int
    """The judge named the step the error was planted in."""
    early: int
    """It named an earlier step (a correct step called wrong)."""
    late: int
    """It named a later step (the error passed over, a later symptom named)."""
    missed: int
    """It named no step: the error undetected."""
    unplaced: int = 0
    """A step named where the instance records no changed step (not placed)."""
    exact_share: Share
    """``exact`` of ``judged``."""
