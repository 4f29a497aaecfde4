"""QA robustness metrics against independent references, edge cases included."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fbi.metrics import (
    auroc,
    cluster_sizes,
    cohens_h,
    effect_size_label,
    fleiss_kappa_over_answers,
    kr20,
    multiqa_metrics,
    noise_metrics,
    performance_drop_rate,
    remap_by_first_appearance,
    response_consistency,
    retest_metrics,
    set_scores,
)
from fbi.metrics import fleiss_kappa as our_fleiss

ANSWERS = np.array([
    ["paris", "paris", "paris", "lyon"],
    ["4", "4", "four", "4"],
    ["blue", "red", "green", "blue"],
    ["x", "x", "x", "x"],
    ["a", "b", "a", "b"],
])
CORRECT = np.array([[1, 1, 1, 0], [1, 1, 0, 1], [1, 0, 0, 1], [1, 1, 1, 1], [0, 1, 0, 1]])


def test_remapping_by_first_appearance():
    labels = remap_by_first_appearance(ANSWERS)
    assert labels.tolist()[2] == [0, 1, 2, 0] and labels.tolist()[4] == [0, 1, 0, 1]
    assert cluster_sizes(labels).tolist()[0] == [3, 1, 0, 0]


def test_fleiss_matches_statsmodels():
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    sizes = cluster_sizes(remap_by_first_appearance(ANSWERS))
    assert our_fleiss(sizes) == pytest.approx(fleiss_kappa(sizes, method="fleiss"))
    # MultiQ&A §5.2: the answers themselves are the categories, pooled across questions
    result = multiqa_metrics(CORRECT, ANSWERS, permutations_count=0)
    table, _ = aggregate_raters(ANSWERS)
    assert result.fleiss_kappa == pytest.approx(fleiss_kappa(table, method="fleiss"))
    assert result.fleiss_kappa_relabelled == pytest.approx(
        fleiss_kappa(sizes, method="fleiss"))
    assert result.fleiss_kappa != pytest.approx(result.fleiss_kappa_relabelled)


def test_fleiss_over_free_text_answers_is_sparse_and_matches_statsmodels():
    """Free text: almost every answer is its own category. The sparse κ equals
    statsmodels' over the dense table, and a table whose dense grid would need
    hundreds of GiB (200,000 questions, ~1,000,000 distinct answers) still computes."""
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    rng = np.random.default_rng(3)
    shared = rng.integers(0, 3, size=(40, 5)).astype(str)
    own = np.char.add(np.char.add(shared, "-q"), np.arange(40).astype(str)[:, None])
    answers = np.where(rng.random((40, 5)) < 0.5, shared, own)
    table, _ = aggregate_raters(answers)
    assert fleiss_kappa_over_answers(answers) == pytest.approx(
        fleiss_kappa(table, method="fleiss"))
    big = np.char.add("answer-", np.arange(1_000_000).astype(str)).reshape(200_000, 5)
    big[:, 1] = big[:, 0]  # two raters agree on every question, no answer shared across
    kappa = multiqa_metrics(np.ones(big.shape), big, permutations_count=0).fleiss_kappa
    # P̄ = 2/(5·4) = 0.1 per question; P̄_e = 200,000·(2/1e6)² + 600,000·(1/1e6)² ≈ 1.4e-6
    expected_e = 200_000 * (2 / 1e6) ** 2 + 600_000 * (1 / 1e6) ** 2
    assert kappa == pytest.approx((0.1 - expected_e) / (1 - expected_e))


def test_fleiss_over_the_answers_by_the_papers_formula():
    """MultiQ&A §5.2 worked by hand: 2 questions, v + 1 = 3 raters.
    q1: a a b; q2: c c c. f: q1 {a: 2, b: 1}, q2 {c: 3}.
    P_1 = (4 + 1 − 3) / (2·3) = 1/3; P_2 = (9 − 3) / 6 = 1; P̄_o = 2/3.
    P̄_e = (2/6)² + (1/6)² + (3/6)² = 14/36. κ = (2/3 − 14/36) / (1 − 14/36) = 10/22."""
    answers = np.array([["a", "a", "b"], ["c", "c", "c"]])
    result = multiqa_metrics(np.ones((2, 3)), answers, permutations_count=0)
    assert result.fleiss_kappa == pytest.approx(10 / 22)


def test_kr20_matches_cronbach_alpha_by_hand():
    frame = pd.DataFrame(CORRECT)
    k = frame.shape[1]
    expected = k / (k - 1) * (1 - frame.var(ddof=0).sum() / frame.sum(axis=1).var(ddof=0))
    assert kr20(CORRECT) == pytest.approx(expected)
    assert kr20(np.ones((3, 4))) is None  # no variance in totals


def test_multiqa_figures_by_hand():
    result = multiqa_metrics(CORRECT, ANSWERS, permutations_count=0)
    assert result.base_accuracy == pytest.approx(4 / 5)
    assert result.worst_case == pytest.approx(1 / 5) and result.best_case == 1.0
    # μ_D (§5.1): the average correctness over questions and variants
    assert result.item_difficulty == pytest.approx(np.mean([3 / 4, 3 / 4, 2 / 4, 1, 2 / 4]))
    # plurality answers: paris ✓, 4 ✓, blue ✓ (2 of 4), x ✓, a (tie a/b, first seen) ✗
    assert result.mode_accuracy == pytest.approx(4 / 5)
    # certainty of a question with one distinct answer is 1
    single = multiqa_metrics(np.ones((1, 3)), np.array([["x", "x", "x"]]), permutations_count=0)
    assert single.certainty == 1.0 and single.gibbs_m2 == 1.0  # M2 = 1: certainty
    uniform = multiqa_metrics(np.ones((1, 3)), np.array([["a", "b", "c"]]),
                              permutations_count=0)
    assert uniform.certainty == pytest.approx(0.0) and uniform.gibbs_m2 == pytest.approx(0)
    # certainty against a fixed number of possible answers K
    fixed = multiqa_metrics(np.ones((1, 4)), np.array([["a", "a", "b", "b"]]), k_possible=4,
                            permutations_count=0)
    assert fixed.certainty == pytest.approx(1 - math.log(2) / math.log(4))


def test_permutation_aggregates_match_brute_force():
    rng = np.random.default_rng(3)
    n, k = 60, 4
    answers = rng.choice(["a", "b", "c"], size=(n, k), p=[0.6, 0.3, 0.1])
    correct = (answers == "a").astype(float)
    exact = multiqa_metrics(correct, answers, permutations_count=4000, seed=1)
    alphas, kappas = [], []
    for _ in range(4000):
        order = np.argsort(rng.random((n, k)), axis=1)
        c = np.take_along_axis(correct, order, axis=1)
        a = np.take_along_axis(answers, order, axis=1)
        alphas.append(kr20(c))
        kappas.append(our_fleiss(cluster_sizes(remap_by_first_appearance(a))))
    assert exact.cronbach_alpha_permuted_mean == pytest.approx(np.mean(alphas), abs=0.01)
    assert exact.cronbach_alpha_permuted_sd == pytest.approx(np.std(alphas), abs=0.01)
    assert exact.fleiss_kappa_permuted_mean == pytest.approx(np.mean(kappas), abs=0.01)
    assert exact.fleiss_kappa_permuted_sd == pytest.approx(np.std(kappas), abs=0.01)


def test_all_raters_agree():
    answers = np.array([["x"] * 4, ["y"] * 4])
    from statsmodels.stats.inter_rater import fleiss_kappa

    result = multiqa_metrics(np.ones((2, 4)), answers, permutations_count=100)
    # Over the answers themselves (the paper's κ), x and y are two categories: κ = 1.
    # With labels remapped, unanimous answers leave P̄_e = 1: κ is undefined, as in
    # statsmodels (nan), and reported as None rather than a made-up number.
    assert result.fleiss_kappa == pytest.approx(1.0)
    assert result.fleiss_kappa_relabelled is None
    with np.errstate(all="ignore"):
        assert np.isnan(fleiss_kappa(np.array([[4.0], [4.0]]), method="fleiss"))
    assert result.certainty == 1.0 and result.cronbach_alpha is None


def test_one_question():
    result = multiqa_metrics(np.array([[1, 0, 1]]), np.array([["a", "b", "a"]]),
                             permutations_count=50)
    assert result.questions == 1 and result.cronbach_alpha is None
    assert result.fleiss_kappa is not None


def test_cohens_h_pdr_and_labels():
    assert cohens_h(0.8, 0.6) == pytest.approx(2 * math.asin(math.sqrt(0.6)) -
                                               2 * math.asin(math.sqrt(0.8)))
    assert performance_drop_rate(0.8, 0.6) == pytest.approx(0.25)
    assert performance_drop_rate(0.0, 0.0) == 0.0
    assert performance_drop_rate(0.0, 0.3) is None  # undefined when the original scores 0
    # the noise paper's Table 4
    assert [effect_size_label(h) for h in (0.005, 0.1, -0.3, 0.6, -1.0, 1.5, -2.5)] == [
        "essentially zero", "very small", "small", "medium", "large", "very large", "huge"]


def test_noise_metrics_with_bca_interval():
    rng = np.random.default_rng(0)
    original = rng.random(80) < 0.8
    perturbed = original & (rng.random(80) < 0.8)
    result = noise_metrics(original, perturbed)
    assert result.ci_method == "BCa"
    assert result.h_ci_low <= result.cohens_h <= result.h_ci_high
    assert result.h_over_pi == pytest.approx(result.cohens_h / math.pi)
    from scipy.stats import bootstrap

    def statistic(o, p, axis=-1):
        return 2 * np.arcsin(np.sqrt(p.mean(axis=axis))) - \
            2 * np.arcsin(np.sqrt(o.mean(axis=axis)))

    reference = bootstrap((original.astype(float), perturbed.astype(float)), statistic,
                          paired=True, vectorized=True, n_resamples=2000, method="BCa",
                          random_state=0).confidence_interval
    assert result.h_ci_low == pytest.approx(reference.low)
    assert result.h_ci_high == pytest.approx(reference.high)


def test_noise_edge_cases():
    zero = noise_metrics(np.zeros(5), np.zeros(5))
    assert zero.pdr == 0.0 and zero.cohens_h == 0.0 and zero.ci_method == "degenerate"
    one = noise_metrics(np.array([1.0]), np.array([0.0]))
    assert one.h_ci_low is None and one.cohens_h == pytest.approx(-math.pi)


def test_answer_order_test_retest():
    original = np.array([1, 1, 0, 1])
    shuffled = np.array([[1, 0], [1, 1], [1, 1], [0, 0]])
    result = retest_metrics(original, shuffled)
    assert result.accuracy == 0.75
    assert result.test_retest_accuracy == pytest.approx(((1 + 1 + 0 + 0) / 4 +
                                                            (0 + 1 + 0 + 0) / 4) / 2)
    assert result.percent_drop == pytest.approx(100 * (0.75 - 0.375) / 0.75)
    assert retest_metrics(np.zeros(2), np.zeros((2, 3))).percent_drop is None


def test_auroc_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    correct = rng.random(50) < 0.5
    confidence = np.round(rng.random(50) + correct * 0.3, 1)  # ties included
    assert auroc(confidence, correct) == pytest.approx(roc_auc_score(correct, confidence))
    assert auroc(np.array([0.2, 0.9]), np.array([True, True])) is None  # a single class


def test_consistency_and_set_scores():
    groups = pd.Series([["a", "a", "a"], ["a", "b", "a"], ["x"]])
    assert response_consistency(groups) == pytest.approx((1 + 1 / 3 + 1) / 3)
    assert set_scores(["paris", "rome"], ["paris", "lyon", "nice"]) == pytest.approx(
        (0.5, 1 / 3, 0.4))
    assert set_scores([], ["a"]) == (0.0, 0.0, 0.0)


def test_gibbs_m2_with_a_fixed_number_of_possible_answers():
    result = multiqa_metrics(np.ones((1, 4)), np.array([["a", "a", "b", "b"]]), k_possible=4,
                             permutations_count=0)
    assert result.gibbs_m2 == pytest.approx(1 - 4 / 3 * (1 - 0.5))


def test_gibbs_m2_by_the_papers_formula():
    """MultiQ&A §5.2: M2 = 1 − mean_j[K_j/(K_j − 1)(1 − Σ p²)], K_j the distinct answers.
    q1: a a b c → p = (.5, .25, .25), K = 3: 1.5 · (1 − .375) = .9375; q2: x x x x → K = 1,
    complete certainty, 0. M2 = 1 − (.9375 + 0)/2 = .53125."""
    answers = np.array([["a", "a", "b", "c"], ["x", "x", "x", "x"]])
    result = multiqa_metrics(np.ones((2, 4)), answers, permutations_count=0)
    assert result.gibbs_m2 == pytest.approx(0.53125)


def test_noise_group_scores_by_the_papers_definition():
    """Noise paper §3 and A.2, worked by hand on six groups (original; perturbations):
    (1; 1 1) PDR 0, h 0            (1; 0 1) PDR .5, h = 2asin√.5 − π = −π/2
    (1; 0 0) PDR 1, h = −π          (0; 0 0) PDR 0 (both wrong), h 0
    (0; 1 0) PDR undefined, h = π/2 (1; 1 0) PDR .5, h = −π/2
    mean PDR over the 5 defined groups = 2/5; mean h = −π/4; mean |h| = 5π/12."""
    from scipy.stats import bootstrap

    from fbi.metrics import noise_group_metrics

    original = np.array([1, 1, 1, 0, 0, 1])
    perturbed = np.array([[1, 1], [0, 1], [0, 0], [0, 0], [1, 0], [1, 0]])
    result = noise_group_metrics(original, perturbed)
    assert result.groups == 6 and result.pdr_undefined_groups == 1
    assert result.pdr == pytest.approx(0.4)
    assert result.cohens_h == pytest.approx(-math.pi / 4)
    assert result.h_over_pi == pytest.approx(-0.25)
    assert result.abs_h == pytest.approx(5 * math.pi / 12)  # (π/2 + π + π/2 + π/2) / 6
    # the interval is scipy's BCa bootstrap over the six group scores (h by the paper's
    # formula, so ties with the mean are the same floats), seed 0
    p_o, p_p = original.astype(float), perturbed.mean(axis=1)
    h = 2 * np.arcsin(np.sqrt(p_p)) - 2 * np.arcsin(np.sqrt(p_o))
    expected = bootstrap((h,), np.mean, n_resamples=2000, method="BCa",
                         random_state=0).confidence_interval
    assert (result.cohens_h_ci_low, result.cohens_h_ci_high) == pytest.approx(
        (expected.low, expected.high))
    # an unanswered perturbation is left out of its group's mean, not counted wrong
    gappy = noise_group_metrics(np.array([1.0]), np.array([[1.0, np.nan]]))
    assert gappy.pdr == 0.0 and gappy.cohens_h == 0.0
