from __future__ import annotations

from fbi.metrics import headline, instance_outcomes, pairwise_class
from fbi.records import Judgment


def judgment(instance="i1", role="gold", strategy="vanilla", paradigm="single", score=None,
             verdict=None, status="ok", category="entity", ability="factual", top=10):
    return Judgment(
        call_id=f"{instance}|{strategy}|{role}", instance_id=instance, ability=ability,
        category=category, strategy=strategy, strategy_version="1", paradigm=paradigm,
        role=role, judge="j", score_range=None if paradigm == "pairwise" else (1, top),
        prompt_hash="h", score=score, verdict=verdict, status=status)


def outcome_of(*judgments):
    (outcome,) = instance_outcomes(judgments)
    return outcome


def test_single_answer_detected_only_if_perturbed_scores_lower():
    assert outcome_of(judgment(role="gold", score=8),
                      judgment(role="perturbed", score=6)).outcome == "detected"
    assert outcome_of(judgment(role="gold", score=8),
                      judgment(role="perturbed", score=8)).outcome == "undetected"  # a tie
    assert outcome_of(judgment(role="gold", score=5),
                      judgment(role="perturbed", score=9)).outcome == "undetected"


def test_single_answer_unparseable_or_missing_call():
    assert outcome_of(judgment(role="gold", score=8),
                      judgment(role="perturbed", status="unparseable")).outcome == "unparseable"
    assert outcome_of(judgment(role="gold", score=8)).outcome == "unparseable"


def test_pairwise_classes():
    assert pairwise_class("gold", "gold") == "G"
    assert pairwise_class("perturbed", "perturbed") == "P"
    assert pairwise_class("tie", "tie") == "both-good"
    assert pairwise_class("both_bad", "both_bad") == "both-bad"
    assert pairwise_class("gold", "perturbed") == "inconsistent"
    assert pairwise_class("gold", "tie") == "inconsistent"


def test_pairwise_detected_iff_gold_preferred_in_both_orders():
    def pair(first, second):
        return outcome_of(
            judgment(role="gold-first", paradigm="pairwise", strategy="pairwise",
                     verdict=first),
            judgment(role="perturbed-first", paradigm="pairwise", strategy="pairwise",
                     verdict=second))
    assert pair("gold", "gold").outcome == "detected"
    assert pair("gold", "perturbed").outcome == "undetected"
    assert pair("gold", "perturbed").pairwise_class == "inconsistent"
    assert pair("tie", "tie").outcome == "undetected"


def test_reference_undetected_iff_top_score():
    def ref(score):
        return outcome_of(judgment(role="perturbed", paradigm="reference",
                                   strategy="reference", score=score))
    assert ref(10).outcome == "undetected"
    assert ref(9).outcome == "detected" and ref(9).perturbed_score == 9


def test_score_invariant_success_means_not_penalised():
    si = {"category": "score-invariant"}
    assert outcome_of(judgment(role="gold", score=7, **si),
                      judgment(role="perturbed", score=7, **si)).outcome == "retained"
    assert outcome_of(judgment(role="gold", score=7, **si),
                      judgment(role="perturbed", score=6, **si)).outcome == "penalised"
    pair = outcome_of(
        judgment(role="gold-first", paradigm="pairwise", verdict="gold", **si),
        judgment(role="perturbed-first", paradigm="pairwise", verdict="tie", **si))
    assert pair.outcome == "retained"


def test_headline_rates_per_ability_column():
    judgments = [
        judgment("a", "gold", score=9), judgment("a", "perturbed", score=5),  # detected
        judgment("b", "gold", score=9), judgment("b", "perturbed", score=9),  # undetected
        judgment("c", "gold", score=9), judgment("c", "perturbed", status="error"),
        judgment("d", "gold", score=4, category="grammar", ability="long-form"),
        judgment("d", "perturbed", score=4, category="grammar", ability="long-form"),
    ]
    rates = headline(instance_outcomes(judgments))[("j", "vanilla")]
    assert (rates["F"].n, rates["F"].hits, rates["F"].parseable, rates["F"].unparseable) == (
        3, 1, 2, 1)
    assert rates["F"].rate == 0.5 and rates["LF"].rate == 1.0
