"""Pure functions of stored records: per-instance outcomes, rates with intervals,
the QA robustness metrics and inter-annotator agreement. No I/O, no model.

The face is lazy (`fbi.faces`): a name's module is imported when the name is
first used, so reading one table's counts does not load numpy and scipy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fbi.faces import lazy_face

__getattr__ = lazy_face("fbi.metrics")

if TYPE_CHECKING:  # the names, for readers and type checkers; lazy_face loads them
    from fbi.metrics._agreement import (
        agreement_report,
        cohen_kappa,
        fleiss_kappa,
        fleiss_table,
        krippendorff_alpha,
        percent_agreement,
    )
    from fbi.metrics._best_of_n import best_of_n, best_of_n_groups
    from fbi.metrics._bias import length_bias, model_family, self_preference
    from fbi.metrics._bootstrap import bootstrap_interval
    from fbi.metrics._compare import SIGNIFICANCE, holm, mcnemar_exact_p, paired_comparisons
    from fbi.metrics._human import (
        VERDICTS,
        HumanLabel,
        Verdict,
        human_agreement,
        judge_verdict,
    )
    from fbi.metrics._leaderboard import cost_per_1000, leaderboard
    from fbi.metrics._manipulation import manipulation_effects
    from fbi.metrics._outcomes import (
        InstanceOutcome,
        Rate,
        headline,
        instance_outcomes,
        judgments_by_instance,
        missing_outcomes,
        outcome_of,
        pairwise_class,
        penalised,
    )
    from fbi.metrics._qa import (
        auroc,
        cluster_sizes,
        cohens_h,
        effect_size_label,
        fleiss_kappa_over_answers,
        kr20,
        multiqa_metrics,
        noise_group_metrics,
        noise_metrics,
        performance_drop_rate,
        remap_by_first_appearance,
        response_consistency,
        retest_metrics,
        set_scores,
        token_confidence,
    )
    from fbi.metrics._qa_results import (
        MAQAMetrics,
        Metrics,
        MultiQAMetrics,
        NoiseGroupMetrics,
        NoiseMetrics,
        NoiseSuite,
        RetestMetrics,
        RobustnessResults,
        SuiteResults,
    )
    from fbi.metrics._ranking import kendall_tau_b, ranking_stability
    from fbi.metrics._rates import (
        aggregate,
        judge_stability,
        master_key_rates,
        pairwise_breakdowns,
        reference_histograms,
        trail_rates,
        turn_rates,
        wilson_interval,
    )
    from fbi.metrics._repeat import repeatability
    from fbi.metrics._results import (
        Agreement,
        AnnotatorAgreement,
        AnnotatorPair,
        BandRate,
        BestOfNComparison,
        BestOfNRow,
        ComparisonRow,
        GroupRate,
        HumanAgreement,
        JudgeAgreement,
        JudgeStabilityRow,
        JudgeStrategy,
        LeaderboardRow,
        LengthBiasRow,
        ManipulationRow,
        PairwiseBreakdown,
        RankingRow,
        ReferenceHistogram,
        RepeatabilityRow,
        Row,
        SelfPreferenceRow,
        Share,
        StepRow,
        TiesScore,
        VettingAgreement,
        WeightedRow,
    )
    from fbi.metrics._steps import step_localisation
    from fbi.metrics._weighted import weighted_rates
