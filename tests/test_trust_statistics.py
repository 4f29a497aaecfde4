"""Issue 43's statistics, against hand-worked numbers, independent libraries (scipy's
binomial, ppi_py) and Monte Carlo draws with synthetic judges whose truth is known: the
guarantee of fixed-sequence testing holds at least at its nominal rate, PPI intervals
cover at theirs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from fbi.trust._calibration import (
    TrustItem,
    assign,
    binomial_upper,
    calibrate,
    cascade,
    human_majority,
    majority,
    verdict_probabilities,
)
from fbi.trust._ppi import classical_mean, effective_labels, plug_in_correction, ppi_mean

DRAWS = 1000


def items_of(confidences, wrong) -> list[TrustItem]:
    return [TrustItem((f"i{k}", "vanilla"), "a", float(c), "b" if w else "a")
            for k, (c, w) in enumerate(zip(confidences, wrong, strict=True))]


# ------------------------------------------------------------------ a worked example


def test_the_exact_bound_by_hand():
    # no error in n: (1 − r)^n = δ, so r = 1 − δ^(1/n)
    assert binomial_upper(0, 10, 0.1) == pytest.approx(1 - 0.1 ** (1 / 10))
    assert binomial_upper(0, 11, 0.1) == pytest.approx(1 - 0.1 ** (1 / 11))
    # otherwise the r at which P(Binomial(n, r) ≤ e) = δ (scipy's binomial)
    upper = binomial_upper(3, 40, 0.1)
    assert binom.cdf(3, 40, upper) == pytest.approx(0.1)
    assert binomial_upper(5, 5, 0.1) == 1.0


def test_fixed_sequence_testing_reproduces_a_worked_example():
    """Target 0.8 (α = 0.2), δ = 0.1, at least 10 items a threshold. Confidences 1.0 …
    0.55 (ten items each at 1.0, 0.9, 0.8, 0.7, 0.6, then 0.55): disagreements none at
    1.0 and 0.9, one at 0.8, two at 0.7, five at 0.6.

    λ = 1.0: n 10, e 0: R⁺ = 1 − 0.1^(1/10) = 0.2057 > 0.2: fails at once → nothing
    certified. With the first bin at 11 items (one more at 1.0): 1 − 0.1^(1/11) =
    0.1889 ≤ 0.2 passes; 0.9: n 21, e 0: 1 − 0.1^(1/21) = 0.1038 passes; 0.8: n 31,
    e 1: passes iff P(Bin(31, 0.2) ≤ 1) ≤ 0.1 (it is 0.0087, so R⁺ < 0.2); 0.7: n 41,
    e 3: P(Bin(41, 0.2) ≤ 3) = 0.0244 ≤ 0.1 passes; 0.6: n 51, e 8: P(Bin(51, 0.2) ≤ 8)
    = 0.2839 > 0.1 fails → λ̂ = 0.7, bound 1 − R⁺(0.7)."""
    confidences = [1.0] * 10 + [0.9] * 10 + [0.8] * 10 + [0.7] * 10 + [0.6] * 10
    wrong = [0] * 20 + [1] + [0] * 9 + [1, 1] + [0] * 8 + [1] * 5 + [0] * 5
    failed = calibrate(items_of(confidences, wrong), 0.8, 0.1, min_items=10)
    assert not failed.certified and failed.threshold is None
    assert [(s.n, s.errors) for s in failed.steps] == [(10, 0)]
    assert failed.steps[0].risk_upper == pytest.approx(0.2056717653)
    assert "certified only down to 0.794" in failed.failure

    result = calibrate(items_of([1.0, *confidences], [0, *wrong]), 0.8, 0.1, min_items=10)
    assert [(s.threshold, s.n, s.errors, s.passed) for s in result.steps] == [
        (1.0, 11, 0, True), (0.9, 21, 0, True), (0.8, 31, 1, True), (0.7, 41, 3, True),
        (0.6, 51, 8, False)]
    for step, p_at_alpha in zip(result.steps, (None, None, 0.0087, 0.0244, 0.2839),
                                strict=True):
        if p_at_alpha is not None:
            assert binom.cdf(step.errors, step.n, 0.2) == pytest.approx(p_at_alpha, abs=1e-4)
    assert result.certified and result.threshold == 0.7
    assert result.agreement_lower_bound == pytest.approx(1 - binomial_upper(3, 41, 0.1))
    assert binom.cdf(3, 41, 1 - result.agreement_lower_bound) == pytest.approx(0.1)
    assert result.calibration_coverage == pytest.approx(41 / 51)


def test_verdicts_and_confidences_by_hand():
    assert majority(["a", "a", "b", "tie"]) == ("a", 0.5)
    assert majority(["b", "a"]) == ("a", 0.5)  # a tie between verdicts: a, b, tie order
    assert human_majority(["a", "b"]) is None and human_majority(["b", "b", "a"]) == "b"
    # gold scores 8 (0.5) or 9 (0.5); perturbed 8 (0.25) or 5 (0.75)
    probabilities = verdict_probabilities({8: 0.5, 9: 0.5}, {8: 0.25, 5: 0.75})
    assert probabilities["tie"] == pytest.approx(0.5 * 0.25)
    assert probabilities["a"] == pytest.approx(0.5 * 0.75 + 0.5 * 1.0)
    assert probabilities["b"] == pytest.approx(0.0)


# ------------------------------------------------------------------ Monte Carlo


def test_the_guarantee_holds_at_its_nominal_rate_over_a_thousand_draws():
    """A judge whose confidence c is uniform and right with probability 0.5 + 0.5c: the
    population risk of the items at or above λ is E[0.5 − 0.5c | c ≥ λ] = 0.25(1 − λ).
    Over 1,000 calibration sets of 400, λ̂ at target 0.85, δ = 0.1: how often its true
    risk exceeds 0.15 — at most δ, within three simulation standard errors."""
    rng = np.random.default_rng(0)
    violations = certified = 0
    for _ in range(DRAWS):
        confidence = rng.uniform(size=400)
        wrong = rng.uniform(size=400) > 0.5 + 0.5 * confidence
        result = calibrate(items_of(confidence, wrong), 0.85, 0.1)
        if result.certified:
            certified += 1
            violations += 0.25 * (1 - result.threshold) > 0.15
    assert certified > DRAWS * 0.8  # the test has power: it certifies most draws
    assert violations / DRAWS <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / DRAWS)


@pytest.mark.slow
def test_a_cascade_keeps_the_guarantee_over_a_thousand_draws():
    """Two independent judges: the cheap one right with probability 0.5 + 0.5c₁, the
    strong one 0.6 + 0.4c₂ (c uniform). Thresholds λ₁, λ₂: the cascade's population
    risk is (A₁ + λ₁A₂) / ((1 − λ₁) + λ₁(1 − λ₂)), A₁ = 0.25(1 − λ₁)², A₂ = 0.2(1 − λ₂)²
    (a stage that certifies nothing takes no item). At most δ of the draws exceed α."""
    rng = np.random.default_rng(1)
    violations = 0
    for _ in range(DRAWS):
        c1, c2 = rng.uniform(size=500), rng.uniform(size=500)
        w1 = rng.uniform(size=500) > 0.5 + 0.5 * c1
        w2 = rng.uniform(size=500) > 0.6 + 0.4 * c2
        judges = [("cheap", items_of(c1, w1)), ("strong", items_of(c2, w2))]
        stages = cascade(judges, 0.85, 0.1)
        l1, l2 = (s.calibration.threshold if s.calibration.certified else 1.0
                  for s in stages)
        covered = (1 - l1) + l1 * (1 - l2)
        if covered > 0:
            risk = (0.25 * (1 - l1) ** 2 + l1 * 0.2 * (1 - l2) ** 2) / covered
            violations += risk > 0.15
    assert violations / DRAWS <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / DRAWS)


def test_a_cascade_sends_each_item_to_the_first_confident_judge():
    """40 items. The cheap judge is confident (0.9) and right on the first 20, unsure
    (0.1) and wrong on the rest; the strong one unsure (0.2) on the first 20 and
    confident (0.95) and right on the rest. Target 0.8, δ = 0.2 (0.1 a stage): the cheap
    judge certifies 0.9 (n 20, no error: R⁺ = 1 − 0.1^(1/20) = 0.109) and stops at 0.1
    (20 errors in 40); the strong one, left the last 20, certifies 0.95 the same way."""
    cheap = items_of([0.9] * 20 + [0.1] * 20, [0] * 20 + [1] * 20)
    strong = items_of([0.2] * 20 + [0.95] * 20, [0] * 40)
    stages = cascade([("cheap", cheap), ("strong", strong)], 0.8, 0.2, min_items=1)
    assert [s.calibration.threshold for s in stages] == [0.9, 0.95]
    assert stages[0].calibration.agreement_lower_bound == pytest.approx(0.1 ** (1 / 20))
    assert [s.calibration.n_calibration for s in stages] == [40, 20]
    taken = assign([("cheap", cheap), ("strong", strong)], stages)
    assert [taken[(f"i{k}", "vanilla")] for k in range(40)] == [0] * 20 + [1] * 20


def test_ppi_equals_ppi_python_and_covers_at_its_rate():
    """300 labelled items of 1,300, a judge that flips 20% of the labels: the 90% PPI++
    interval (the normal interval undercovers at a few labels, as the people's own
    does: about 87% at 100 here)."""
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(2)
    covered = {"ppi": 0, "human": 0}
    for draw in range(DRAWS):
        truth = 0.3
        y_all = (rng.uniform(size=1300) < truth).astype(float)
        flip = rng.uniform(size=1300) < 0.2
        judge_all = np.where(flip, 1 - y_all, y_all)
        y, judge, unlabelled = y_all[:300], judge_all[:300], judge_all[300:]
        estimate, _ = ppi_mean(y.tolist(), judge.tolist(), unlabelled.tolist(), level=0.9)
        if draw < 20:  # the same numbers as the library
            low, high = ppi_py.ppi_mean_ci(y, judge, unlabelled, alpha=0.1)
            assert (estimate.low, estimate.high) == pytest.approx(
                (float(low[0]), float(high[0])), rel=1e-9)
            assert estimate.value == pytest.approx(float(ppi_py.ppi_mean_pointestimate(
                y, judge, unlabelled)[0]), rel=1e-9)
            plain_low, plain_high = ppi_py.ppi_mean_ci(y, judge, unlabelled, alpha=0.1,
                                                      lam=1)
            plain, _ = ppi_mean(y.tolist(), judge.tolist(), unlabelled.tolist(), level=0.9,
                                power_tuning=False)
            assert (plain.low, plain.high) == pytest.approx(
                (float(plain_low[0]), float(plain_high[0])), rel=1e-9)
        covered["ppi"] += estimate.low <= truth <= estimate.high
        human = classical_mean(y.tolist(), level=0.9)
        covered["human"] += human.low <= truth <= human.high
    simulation_error = 3 * math.sqrt(0.9 * 0.1 / DRAWS)
    assert covered["ppi"] / DRAWS >= 0.9 - simulation_error


def test_effective_labels_by_hand():
    from fbi.trust._ppi import Estimate

    assert effective_labels(Estimate(0.5, 0.4, 0.6), Estimate(0.5, 0.45, 0.55), 100) == \
        pytest.approx(400)


def test_the_plug_in_correction_reproduces_a_worked_example():
    """p̂ 0.6 of n 200, specificity 0.8 of m₀ 50, sensitivity 0.9 of m₁ 50, 95%:
    θ̂ = (0.6 + 0.8 − 1)/(0.8 + 0.9 − 1) = 0.4/0.7 = 0.571429. With z = 1.959964 (z² =
    3.841459): p̃ = (120 + 1.920729)/203.841459 = 0.598116; q̃₀ = 41/52 = 0.788462;
    q̃₁ = 46/52 = 0.884615; θ̃ = (0.598115 + 0.788462 − 1)/(0.673077) = 0.574343;
    shift = 2·3.841459·(0.574343·0.884615·0.115385/52 − 0.425657·0.788462·0.211538/52)
          = −0.0018279;
    se = √(0.598115·0.401885/203.841459 + 0.425657²·0.166790/52
           + 0.574343²·0.102071/52) / 0.673077 = 0.0729040;
    interval 0.572515 ∓ 1.959964·0.0729040 = [0.429626, 0.715404]."""
    estimate = plug_in_correction(0.6, 0.8, 0.9, 200, 50, 50)
    assert estimate.value == pytest.approx(0.4 / 0.7)
    assert estimate.low == pytest.approx(0.429626, abs=2e-6)
    assert estimate.high == pytest.approx(0.715404, abs=2e-6)
    chance = plug_in_correction(0.6, 0.5, 0.5, 200, 50, 50)
    assert chance.value is None and "no better than chance" in chance.note


def test_a_plug_in_interval_outside_the_unit_range_is_clipped_whole_and_said():
    """Issue 53's case: p̂ 0 of n 100, specificity 0.55 of m₀ 40, sensitivity 0.8 of m₁
    200. p̃ = 1.920729/103.841459 = 0.018497; q̃₀ = 23/42 = 0.547619; q̃₁ = 161/202 =
    0.797030; θ̃ = (0.018497 + 0.547619 − 1)/0.344649 = −1.258917; shift = 7.682918 ·
    (−1.258917·0.161772/202 − 2.258917·0.247732/42) = −0.110115; se = √(0.0001748 +
    0.030098 + 0.0012692)/0.344649 = 0.515310; interval −1.369032 ∓ 1.010 = [−2.379,
    −0.359], wholly below 0: [0, 0], with a note (before: [0, −0.359], inverted)."""
    estimate = plug_in_correction(0.0, 0.55, 0.8, 100, 40, 200)
    assert estimate.value == 0.0 and estimate.low == 0.0 and estimate.high == 0.0
    assert "(-2.38, -0.36) lies outside [0, 1]" in estimate.note
    inside = plug_in_correction(0.6, 0.8, 0.9, 200, 50, 50)
    assert inside.note == "" and inside.low <= inside.value <= inside.high


# ------------------------------------------------------------------ grids (issue 53)


def _authors_lambda_hat(confidence, wrong, alpha, delta):
    """The authors' procedure written again here from their util.py, with scipy's
    root-finder on the binomial CDF as they bound the risk: the grid
    linspace(0, 1, 5000) with at least 30 items at or above each point, tested from the
    highest down, each point itself; the last point passing before the first failure
    (None when the highest fails)."""
    from scipy.optimize import brentq

    confidence, wrong = np.asarray(confidence), np.asarray(wrong)
    found = None
    for lam in np.linspace(0, 1, 5000)[::-1]:
        at = confidence >= lam
        n, e = int(at.sum()), int(wrong[at].sum())
        if n < 30:
            continue
        upper = 1.0 if e == n else brentq(lambda r, e=e, n=n: binom.cdf(e, n, r) - delta,
                                          0, 0.9999)
        if upper > alpha:
            return found
        found = lam
    return found


@pytest.mark.slow
def test_the_authors_grid_finds_the_threshold_their_procedure_finds():
    rng = np.random.default_rng(7)
    for draw in range(6):
        confidence = rng.uniform(0.3, 1.0, size=300)
        wrong = rng.uniform(size=300) > 0.55 + 0.45 * confidence
        expected = _authors_lambda_hat(confidence, wrong, 0.2, 0.1)
        result = calibrate(items_of(confidence, wrong), 0.8, 0.1, grid="authors")
        assert result.grid == "authors"
        if expected is None:
            assert not result.certified, draw
        else:
            assert result.threshold == pytest.approx(expected, abs=1e-12), draw
            assert result.calibration_coverage == (confidence >= expected).sum() / 300


def test_several_starts_certify_what_one_error_at_the_top_would_stop():
    """40 items of distinct confidences, the most confident one wrong, the rest right;
    target 0.8 (α = 0.2), δ = 0.1, min_items 10. One sequence tests n = 10 first: one
    error in 10 bounds the risk at 0.337 (scipy: P(Bin(10, r) ≤ 1) = 0.1) > 0.2, and
    stops. Multistart starts at n = 10, 20 and 40 (m = 3, each at δ/3): one error bounds
    the risk at 0.425 in 10 and 0.235 in 20 (both fail) and 0.124 in 40 (passes) —
    every item is certified."""
    from scipy.optimize import brentq

    confidence = np.linspace(1.0, 0.61, 40)
    wrong = [1] + [0] * 39

    def upper(e, n, level):
        return brentq(lambda r: binom.cdf(e, n, r) - level, 0, 1)

    one = calibrate(items_of(confidence, wrong), 0.8, 0.1, min_items=10, grid="coarse")
    assert not one.certified and [(s.n, s.errors) for s in one.steps] == [(10, 1)]
    assert one.steps[0].risk_upper == pytest.approx(upper(1, 10, 0.1), abs=1e-9)
    several = calibrate(items_of(confidence, wrong), 0.8, 0.1, min_items=10)
    assert several.grid == "multistart"  # 40 distinct confidences: continuous
    assert [(s.start, s.n, s.passed) for s in several.steps] == [
        (10, 10, False), (20, 20, False), (40, 40, True)]
    for step in several.steps:
        assert step.risk_upper == pytest.approx(upper(step.errors, step.n, 0.1 / 3),
                                                abs=1e-9)
    assert several.certified and several.calibration_coverage == 1.0
    assert several.threshold == pytest.approx(0.61)


def test_several_starts_keep_the_guarantee_and_certify_more_over_a_thousand_draws():
    """A judge that errs rarely but not never at the top: wrong with probability
    0.02 + 0.3(1 − c)² (c uniform), so the risk of the items at or above λ is
    0.02 + 0.1(1 − λ)². Target 0.9, δ = 0.1, 400 labelled items: multistart exceeds the
    risk in at most δ of the draws (within three simulation standard errors), and
    certifies more draws than the single sequence over every distinct confidence."""
    rng = np.random.default_rng(3)
    violations, certified = 0, {"multistart": 0, "distinct": 0}
    for _ in range(DRAWS):
        confidence = rng.uniform(size=400)
        wrong = rng.uniform(size=400) < 0.02 + 0.3 * (1 - confidence) ** 2
        for grid in certified:
            result = calibrate(items_of(confidence, wrong), 0.9, 0.1, grid=grid)
            if result.certified:
                certified[grid] += 1
                if grid == "multistart":
                    violations += 0.02 + 0.1 * (1 - result.threshold) ** 2 > 0.1
    assert violations / DRAWS <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / DRAWS)
    assert certified["multistart"] > certified["distinct"]


@pytest.mark.parametrize("theta, q0, q1, n, m0, m1", [
    (0.7, 0.8, 0.9, 500, 100, 100), (0.9, 0.7, 0.95, 300, 40, 200),
    (0.5, 0.9, 0.85, 1000, 200, 200)])
def test_the_plug_in_interval_covers_at_its_rate_over_a_thousand_draws(theta, q0, q1, n,
                                                                       m0, m1):
    """A binary judge with known specificity q0 and sensitivity q1 labels n test items
    whose true share correct is θ; q0 and q1 are estimated on m0 and m1 labelled items.
    The 95% interval covers θ in at least 95% of the draws, within three simulation
    standard errors (issue 53's Monte Carlo check of each guarantee)."""
    rng = np.random.default_rng(11)
    covered = 0
    for _ in range(DRAWS):
        truth = rng.uniform(size=n) < theta
        said = np.where(truth, rng.uniform(size=n) < q1, rng.uniform(size=n) >= q0)
        found = plug_in_correction(float(said.mean()), float((rng.uniform(size=m0) < q0).mean()),
                                   float((rng.uniform(size=m1) < q1).mean()), n, m0, m1)
        covered += found.low is not None and found.low <= theta <= found.high
    assert covered / DRAWS >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / DRAWS)
