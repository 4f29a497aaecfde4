"""QA robustness metrics: pure, vectorised functions over answer tables. No I/O.

Conventions: ``correct`` is an (N questions × k variants) 0/1 array with variant 0 the
original question; ``answers`` is an (N × k) array of normalised answers (or cluster
ids). Every function documents its formula and its edge cases.

MultiQ&A (rephrasings; variants act as raters)
    base accuracy      mean correctness of variant 0.
    mode accuracy      correctness of each question's plurality answer, averaged; a tie
                       between answers is broken towards the answer seen first.
    worst / best case  share of questions answered correctly under every / some variant.
    item difficulty μ_D  the average correctness over all questions and variants (paper
                       §5.1, after Lord 1952): higher means easier.
    certainty H_η      per question 1 − H/log K, H the entropy of the distribution of its
                       distinct answers and K the number of possible answers (default: the
                       distinct answers observed); a question with one distinct answer
                       has certainty 1. Averaged over questions.
    Gibbs' M2          1 − mean over questions of K/(K−1)·(1 − Σ p²) (paper §5.2): 1 is
                       complete certainty, 0 a uniform spread; K as for H_η; a question
                       with K = 1 adds 0 to the mean (complete certainty).
    Fleiss' κ          paper §5.2: the answers themselves are the categories (the chosen
                       option's text for multiple choice, the normalised answer for free
                       text), variants are the raters, and P̄_e pools each answer's
                       frequency across all questions: P̄_e = Σ_i (Σ_j f_ij / n(v+1))²;
                       None when P̄_e = 1.
    Fleiss' κ, relabelled  fbi's second figure: the same with each question's answers
                       relabelled in order of first appearance (so "the first answer
                       given" is a category shared by all questions).
    Cronbach's α       KR-20 on correctness, variants as test items:
                       α = k/(k−1)·(1 − Σ_v p_v q_v / σ²), σ² the (population) variance of
                       the per-question totals; None when σ² = 0 or k < 2.
    permutations       Cronbach's α and the relabelled κ depend on which variant plays
                       which rater (the paper's κ does not); their mean and spread over
                       random permutations of the variants within each question (labels
                       remapped each time) are computed exactly by grouping questions
                       with the same pattern.

Natural noise (non-adversarial-robustness-cohens-h, §3 and Appendix A.2)
    groups             a group is one original question and its perturbations; p_orig is
                       its score (0/1) and p_pert the mean score of its perturbations.
    performance drop rate  per group PDR = (p_orig − p_pert)/p_orig; 0 when both are 0;
                       undefined when p_orig = 0 and p_pert > 0: such groups are counted
                       and left out of the mean.
    Cohen's h          per group h = 2·asin√p_pert − 2·asin√p_orig; also h/π and |h|.
    headline           the mean of each group score over the groups, with a 95% BCa
                       bootstrap over the group scores (percentile when BCa is
                       degenerate; "degenerate" when every group scores the same).
    effect labels      the paper's Table 4 on |h|: essentially zero < 0.01, very small
                       < 0.2, small < 0.5, medium < 0.8, large < 1.2, very large < 2,
                       huge.
    per noise type     a second table: the same formulas on the accuracies pooled over
                       the questions, original vs one kind of noise, with a paired
                       bootstrap over questions.

Answer order (MMLU shuffles)
    test-retest        mean over shuffles of mean over questions of
                       [correct on the original AND on the shuffle]; % drop from accuracy.

MAQA (multiple correct answers, sampled m times)
    consistency        per question, share of agreeing pairs among the m normalised answers.
    AUROC              of a confidence against correctness (Mann-Whitney, ties counted ½);
                       None when only one class is present.
    precision / recall / F1  of the answered set against the gold set; an answer counts
                       as correct iff its precision > 0.5 (MAQA §4.3).
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations, permutations
from typing import TYPE_CHECKING

import numpy as np

from fbi.metrics._agreement import fleiss_kappa
from fbi.metrics._bootstrap import bca_interval
from fbi.metrics._qa_results import (
    MultiQAMetrics,
    NoiseGroupMetrics,
    NoiseMetrics,
    RetestMetrics,
)

if TYPE_CHECKING:  # pandas is imported where it is used: it costs every command 0.3 s
    import pandas as pd

#: Cohen's h rule-of-thumb thresholds on |h| (the noise paper's Table 4).
EFFECT_SIZE_LABELS = ((0.01, "essentially zero"), (0.2, "very small"), (0.5, "small"),
                      (0.8, "medium"), (1.2, "large"), (2.0, "very large"))


# ------------------------------------------------------------------ helpers


def remap_by_first_appearance(answers: np.ndarray) -> np.ndarray:
    """(N × k) answers → (N × k) ints: 0 for the first answer seen in a row, 1 for the
    next new one, and so on. Vectorised over rows."""
    answers = np.asarray(answers)
    n, k = answers.shape
    # Compare integer codes, not strings: the same answers, far faster for large tables.
    import pandas as pd

    codes = pd.factorize(answers.ravel())[0].reshape(n, k)
    equal = codes[:, :, None] == codes[:, None, :]  # (N, k, k): column j equals column l
    first = np.argmax(equal, axis=2)  # index of the first column holding the same answer
    is_new = first == np.arange(k)[None, :]
    label_of_column = np.cumsum(is_new, axis=1) - 1
    return np.take_along_axis(label_of_column, first, axis=1)


def fleiss_kappa_over_answers(answers: np.ndarray, sizes: np.ndarray | None = None
                              ) -> float | None:
    """Fleiss' κ with the answers themselves as categories (MultiQ&A §5.2), computed
    sparsely so that free-text answers (a new category per question) cost O(N·k).

    The dense items × categories table would be N × (distinct answers): for a million
    free-text answers that is hundreds of GiB. Both terms of κ need far less:
    P̄ needs only each question's own answer counts (its cluster sizes), and P̄_e only
    each answer's total count across the table. The result equals Fleiss' κ of the dense
    table (statsmodels' ``fleiss_kappa`` of ``aggregate_raters``); None when k < 2 or
    P̄_e = 1. ``sizes``, the answers' cluster sizes, may be passed when already computed.
    """
    answers = np.asarray(answers)
    n, k = answers.shape
    if n == 0 or k < 2:
        return None
    import pandas as pd

    codes = pd.factorize(answers.ravel())[0]
    if sizes is None:
        sizes = cluster_sizes(remap_by_first_appearance(answers))
    return _fleiss_from_sizes_and_totals(sizes, np.bincount(codes))


def _fleiss_from_sizes_and_totals(sizes: np.ndarray, category_totals: np.ndarray
                                  ) -> float | None:
    """κ = (P̄ − P̄_e)/(1 − P̄_e) from each item's category counts (any order: only
    Σ n_ij(n_ij − 1) is used) and each category's total over the items."""
    n, k = sizes.shape[0], int(sizes[0].sum())
    agreement = float(((sizes * (sizes - 1)).sum(axis=1) / (k * (k - 1))).mean())
    shares = category_totals / (n * k)
    expected = float((shares ** 2).sum())
    if expected == 1:
        return None
    return (agreement - expected) / (1 - expected)


def cluster_sizes(labels: np.ndarray) -> np.ndarray:
    """(N × k) remapped labels → (N × k) counts of each label (label j in column j)."""
    n, k = labels.shape
    counts = np.zeros((n, k), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(n), k), labels.ravel()), 1)
    return counts


# ------------------------------------------------------------------ MultiQ&A


def multiqa_metrics(correct: np.ndarray, answers: np.ndarray, k_possible: int | None = None,
                    permutations_count: int = 1000, seed: int = 0) -> MultiQAMetrics:
    """The MultiQ&A metrics (§5) of a questions × variants table of correctness and answers:
    accuracies, item difficulty, normalised certainty, Gibbs' M2, Fleiss' κ, Cronbach's
    α (KR-20), and fbi's permutation figures."""
    correct = np.asarray(correct, dtype=np.float64)
    n, k = correct.shape
    labels = remap_by_first_appearance(answers)
    sizes = cluster_sizes(labels)
    distinct = (sizes > 0).sum(axis=1)
    mode_label = np.argmax(sizes, axis=1)  # the earliest label among the largest clusters
    mode_correct = correct[np.arange(n), np.argmax(labels == mode_label[:, None], axis=1)]
    shares = sizes / k
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(shares > 0, shares * np.log(shares), 0.0).sum(axis=1)
        k_for_h = np.full(n, k_possible, dtype=np.float64) if k_possible else distinct
        certainty = np.where(k_for_h > 1, 1 - entropy / np.log(np.maximum(k_for_h, 2)), 1.0)
        variation = np.where(k_for_h > 1,
                             k_for_h / (k_for_h - 1) * (1 - (shares ** 2).sum(axis=1)), 0.0)
    result = {
        "questions": n, "variants": k,
        "base_accuracy": float(correct[:, 0].mean()),
        "mean_accuracy": float(correct.mean()),
        "mode_accuracy": float(mode_correct.mean()),
        "worst_case": float(correct.min(axis=1).mean()),
        "best_case": float(correct.max(axis=1).mean()),
        "item_difficulty": float(correct.mean(axis=1).mean()),
        "certainty": float(certainty.mean()),
        "gibbs_m2": float(1 - variation.mean()),
        "fleiss_kappa": fleiss_kappa_over_answers(answers, sizes),
        "fleiss_kappa_relabelled": fleiss_kappa(sizes),
        "cronbach_alpha": kr20(correct),
    }
    if permutations_count and k >= 2:
        result.update(permutation_aggregates(correct, sizes, permutations_count, seed))
    return MultiQAMetrics(**result)


def kr20(correct: np.ndarray) -> float | None:
    """Cronbach's α for 0/1 items (KR-20); variants are the items, questions the people."""
    correct = np.asarray(correct, dtype=np.float64)
    k = correct.shape[1]
    variance = correct.sum(axis=1).var()
    if k < 2 or variance == 0:
        return None
    p = correct.mean(axis=0)
    return float(k / (k - 1) * (1 - (p * (1 - p)).sum() / variance))


def permutation_aggregates(correct: np.ndarray, sizes: np.ndarray, count: int,
                           seed: int) -> dict:
    """Mean and standard deviation of KR-20 α and Fleiss' κ over ``count`` random
    permutations of the variants within each question (labels remapped each time).

    Exact sampling without touching every answer: a question's correctness row only
    matters through how many variants are right (c), and a permutation scatters those c
    ones over a uniformly random c-subset of positions; questions with the same c are
    drawn together with one multinomial. Likewise the remapped label counts of a question
    are its cluster sizes in size-biased random order; questions with the same cluster
    sizes are drawn together over the distinct orders.
    """
    rng = np.random.default_rng(seed)
    n, k = correct.shape
    # KR-20: positions of the correct answers under the permutation
    totals = correct.sum(axis=1)
    variance = totals.var()
    ones_at = np.zeros((count, k))
    for c, m in Counter(totals.astype(int).tolist()).items():
        if c in (0, k):
            ones_at += m * (c == k)
            continue
        subsets = list(combinations(range(k), c))
        indicator = np.zeros((len(subsets), k))
        for row, subset in enumerate(subsets):
            indicator[row, list(subset)] = 1
        ones_at += rng.multinomial(m, [1 / len(subsets)] * len(subsets), size=count) @ indicator
    p = ones_at / n
    alphas = (k / (k - 1) * (1 - (p * (1 - p)).sum(axis=1) / variance)) if variance > 0 \
        else np.full(count, np.nan)
    # Fleiss: remapped label counts in size-biased order
    label_totals = np.zeros((count, k))
    patterns = Counter(tuple(sorted(row[row > 0].tolist(), reverse=True)) for row in sizes)
    for pattern, m in patterns.items():
        orders, probabilities = _size_biased_orders(pattern, k)
        draws = rng.multinomial(m, probabilities, size=count)  # (count, orders)
        padded = np.array([list(o) + [0] * (k - len(o)) for o in orders], dtype=float)
        label_totals += draws @ padded
    agreement = ((sizes * (sizes - 1)).sum(axis=1) / (k * (k - 1))).mean()
    shares = label_totals / (n * k)
    expected = (shares ** 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(expected < 1, (agreement - expected) / (1 - expected), np.nan)

    def stats(values: np.ndarray) -> tuple[float | None, float | None]:
        values = values[~np.isnan(values)]
        return (float(values.mean()), float(values.std())) if values.size else (None, None)

    alpha_mean, alpha_sd = stats(alphas)
    kappa_mean, kappa_sd = stats(kappas)
    return {"permutations": count, "cronbach_alpha_permuted_mean": alpha_mean,
            "cronbach_alpha_permuted_sd": alpha_sd, "fleiss_kappa_permuted_mean": kappa_mean,
            "fleiss_kappa_permuted_sd": kappa_sd}


def _size_biased_orders(pattern: tuple[int, ...], k: int) -> tuple[list, list]:
    """Distinct orders of cluster sizes, each with its size-biased probability."""
    probabilities: dict[tuple[int, ...], float] = {}
    for order in set(permutations(range(len(pattern)))):
        sizes = tuple(pattern[i] for i in order)
        probability, left = 1.0, k
        for size in sizes:
            probability *= size / left
            left -= size
        probabilities[sizes] = probabilities.get(sizes, 0.0) + probability
    orders = sorted(probabilities)
    # permutations of equal clusters each had their share: normalise to sum to 1
    total = sum(probabilities.values())
    return orders, [probabilities[o] / total for o in orders]


# ------------------------------------------------------------------ natural noise


def cohens_h(p_original: float, p_perturbed: float) -> float:
    """Cohen's h between two proportions: 2·asin√p_perturbed − 2·asin√p_original (the noise-
    robustness paper, §3; negative when the perturbation hurts)."""
    return 2 * math.asin(math.sqrt(p_perturbed)) - 2 * math.asin(math.sqrt(p_original))


def effect_size_label(h: float) -> str:
    """The size of |h| in words, by the bands of the noise-robustness paper's Table 4
    (essentially zero … huge)."""
    for limit, label in EFFECT_SIZE_LABELS:
        if abs(h) < limit:
            return label
    return "huge"


def performance_drop_rate(p_original: float, p_perturbed: float) -> float | None:
    """PDR = (p_original − p_perturbed) / p_original (the noise-robustness paper, Appendix
    A.2): 0 when both are 0, None when only p_original is 0."""
    if p_original == 0:
        return 0.0 if p_perturbed == 0 else None
    return (p_original - p_perturbed) / p_original


def noise_group_metrics(original: np.ndarray, perturbed: np.ndarray, seed: int = 0,
                        resamples: int = 2000) -> NoiseGroupMetrics:
    """The noise paper's group scores (see the module docstring).

    ``original``: (N,) 0/1 score of each original question; ``perturbed``: (N × m) 0/1
    scores of its perturbations, NaN where one was not answered. Groups whose original
    or every perturbation is unanswered are left out (counted in ``groups_incomplete``).
    """
    original = np.asarray(original, dtype=np.float64)
    perturbed = np.asarray(perturbed, dtype=np.float64).reshape(len(original), -1)
    complete = ~np.isnan(original) & ~np.isnan(perturbed).all(axis=1)
    p_o = original[complete]
    with np.errstate(invalid="ignore"):
        p_p = np.nanmean(perturbed[complete], axis=1) if complete.any() else p_o
        h = 2 * np.arcsin(np.sqrt(p_p)) - 2 * np.arcsin(np.sqrt(p_o))
        pdr = np.where(p_o > 0, (p_o - p_p) / np.where(p_o > 0, p_o, 1),
                       np.where(p_p == 0, 0.0, np.nan))
    defined = ~np.isnan(pdr)
    result: dict = {"groups": int(complete.sum()),
                    "groups_incomplete": int((~complete).sum()),
                    "pdr_undefined_groups": int((~defined).sum())}
    if not complete.any():
        return NoiseGroupMetrics(**result)
    result.update(accuracy_original=float(p_o.mean()), accuracy_perturbed=float(p_p.mean()))
    for name, values in (("pdr", pdr[defined]), ("cohens_h", h), ("h_over_pi", h / math.pi),
                         ("abs_h", np.abs(h))):
        result[name] = float(values.mean()) if values.size else None
        low, high, method = bootstrap_mean(values, seed, resamples)
        result.update({f"{name}_ci_low": low, f"{name}_ci_high": high,
                       f"{name}_ci_method": method})
    result["effect"] = effect_size_label(result["cohens_h"])
    return NoiseGroupMetrics(**result)


def bootstrap_mean(values: np.ndarray, seed: int = 0, resamples: int = 2000
                   ) -> tuple[float | None, float | None, str | None]:
    """95% BCa bootstrap interval of the mean of group scores; percentile when BCa is
    degenerate; the value itself, marked "degenerate", when every score is equal."""
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return None, None, None
    if np.all(values == values[0]):
        return float(values[0]), float(values[0]), "degenerate"
    return bca_interval((values,), np.mean, resamples, seed)


def noise_metrics(original: np.ndarray, perturbed: np.ndarray, seed: int = 0,
                  resamples: int = 2000) -> NoiseMetrics:
    """Paired correctness (one value per question) before and after one kind of noise."""
    original = np.asarray(original, dtype=np.float64)
    perturbed = np.asarray(perturbed, dtype=np.float64)
    p_o, p_p = float(original.mean()), float(perturbed.mean())
    h = cohens_h(p_o, p_p)
    result = {"questions": len(original), "accuracy_original": p_o, "accuracy_perturbed": p_p,
              "pdr": performance_drop_rate(p_o, p_p), "cohens_h": h, "h_over_pi": h / math.pi,
              "abs_h": abs(h), "effect": effect_size_label(h),
              "h_ci_low": None, "h_ci_high": None, "ci_method": None}
    if len(original) >= 2:
        low, high, method = _paired_bootstrap_h(original, perturbed, seed, resamples)
        result.update(h_ci_low=low, h_ci_high=high, ci_method=method)
    return NoiseMetrics(**result)


def _paired_bootstrap_h(original, perturbed, seed, resamples):
    def statistic(o, p, axis=-1):
        po = np.clip(o.mean(axis=axis), 0, 1)
        pp = np.clip(p.mean(axis=axis), 0, 1)
        return 2 * np.arcsin(np.sqrt(pp)) - 2 * np.arcsin(np.sqrt(po))

    if np.all(original == original[0]) and np.all(perturbed == perturbed[0]):
        value = float(statistic(original, perturbed))
        return value, value, "degenerate"  # every resample gives the same h
    return bca_interval((original, perturbed), statistic, resamples, seed, paired=True)


# ------------------------------------------------------------------ answer order


def retest_metrics(original: np.ndarray, shuffled: np.ndarray) -> RetestMetrics:
    """``original``: (N,) correctness; ``shuffled``: (N × K) correctness per shuffle."""
    original = np.asarray(original, dtype=bool)
    shuffled = np.asarray(shuffled, dtype=bool)
    accuracy = float(original.mean())
    retest = float((original[:, None] & shuffled).mean(axis=0).mean())
    return RetestMetrics(
        questions=len(original), shuffles=shuffled.shape[1], accuracy=accuracy,
        test_retest_accuracy=retest,
        percent_drop=None if accuracy == 0 else 100 * (accuracy - retest) / accuracy)


# ------------------------------------------------------------------ MAQA


def response_consistency(groups: pd.Series) -> float:
    """Mean over questions of the share of agreeing pairs among their sampled answers."""
    shares = []
    for answers in groups:
        pairs = list(combinations(answers, 2))
        shares.append(sum(a == b for a, b in pairs) / len(pairs) if pairs else 1.0)
    return float(np.mean(shares)) if shares else float("nan")


def auroc(confidence: np.ndarray, correct: np.ndarray) -> float | None:
    """Area under the ROC curve of ``confidence`` for telling right from wrong answers."""
    confidence = np.asarray(confidence, dtype=np.float64)
    correct = np.asarray(correct, dtype=bool)
    keep = ~np.isnan(confidence)
    confidence, correct = confidence[keep], correct[keep]
    positives, negatives = correct.sum(), (~correct).sum()
    if positives == 0 or negatives == 0:
        return None
    import pandas as pd

    ranks = pd.Series(confidence).rank(method="average").to_numpy()
    return float((ranks[correct].sum() - positives * (positives + 1) / 2) /
                 (positives * negatives))


def set_scores(predicted: list[str], gold: list[str]) -> tuple[float, float, float]:
    """Precision, recall and F1 of a set of normalised answers against the gold set."""
    predicted_set, gold_set = set(predicted), set(gold)
    if not predicted_set or not gold_set:
        return 0.0, 0.0, 0.0
    hits = len(predicted_set & gold_set)
    precision, recall = hits / len(predicted_set), hits / len(gold_set)
    f1 = 0.0 if hits == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def token_confidence(token_logprobs: list[list[tuple[str, float]]] | None
                     ) -> dict[str, float] | None:
    """Confidence from token log-probabilities, each a mean over the generated tokens:
    ``max_softmax`` the chosen token's probability, ``margin`` its lead over the runner-up
    (0 without one), ``neg_entropy`` minus the entropy of the renormalised top candidates.
    None when the provider returned none."""
    if not token_logprobs:
        return None
    chosen, margins, entropies = [], [], []
    for top in token_logprobs:
        probabilities = np.exp(np.asarray([logprob for _, logprob in top], dtype=np.float64))
        chosen.append(probabilities[0])
        margins.append(probabilities[0] - probabilities[1] if len(probabilities) > 1 else 0.0)
        p = probabilities / probabilities.sum()
        entropies.append(float(-(p * np.log(p)).sum()))
    return {"max_softmax": float(np.mean(chosen)), "margin": float(np.mean(margins)),
            "neg_entropy": -float(np.mean(entropies))}
