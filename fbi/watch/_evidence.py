"""How strongly a canary's record says the judge changed: an e-detector for a rise in a
failure rate at an unknown step, with false alarms controlled over unlimited looks.

**The question.** A watch asks the same canary set step after step; per stream (one
strategy, one category) a step gives ``failures`` of ``asked`` judgments. Under the null
the judge is unchanged, and — because each step draws its canary instances uniformly
with replacement (``_watch``) — every judgment of a stream is an independent Bernoulli
draw with one unknown failure rate p. The alternative: from some step k on, the rate is
another.

**The e-process.** For a candidate change step k, the universal-inference likelihood
ratio (Wasserman, Ramdas and Balakrishnan 2020, "Universal inference", PNAS §3;
for change detection, Shin, Ramdas and Rinaldo 2023, "E-detectors", §2)::

    Λ_k(t) = KT(x_before k) · KT(x_from k) / sup_p P_p(x_1..t)

KT is the Krichevsky–Trofimov mixture — the Beta(½, ½) average of p^m (1 − p)^(n − m),
a predictive distribution that does not look ahead — so the numerator, with k fixed, is a
probability of the sequence, and dividing by the null's maximum likelihood is dividing
by at least the true null's likelihood: Λ_k is bounded by a nonnegative martingale
starting at 1 under every p. A change may start at any step, so the starts are mixed
with fixed weights ``w_k = ln 2 · (1/ln k − 1/ln(k + 1))``, k = 2, 3, … (they telescope
to 1; about ``ln 2 / (k ln² k)``, a heavier tail than ``1/k²``, so a change late in a
long watch pays ``ln k + 2 ln ln k`` nats of evidence rather than ``2 ln k``):
``E(t) = Σ_{k ≤ t} w_k Λ_k(t)`` stays below a martingale starting at 1, and Ville's
inequality gives ``P(E(t) ≥ 1/α for some t, ever) ≤ α`` — however long the watch runs
and however often it is looked at. The streams are averaged (a Bonferroni split of α:
an average of e-processes of independent streams is one too).

Why not a kept library: ``confseq`` (Howard et al.'s confidence sequences) does not
build here (it needs Boost) and ``expectation`` needs Python ≥ 3.12; neither offers a
change detector with a composite pre-change rate. The tests check this computation
against an independent one (the Beta mixture integrated by ``scipy.integrate.quad``,
the maximum likelihood found by ``scipy.optimize``) and its false-alarm rate by Monte
Carlo; ``benchmarks/watch_alarm.py`` measures detection delays.

**What it costs.** A change at step k pays ``−ln w_k`` nats of evidence, the two
mixtures about ``½ ln n`` each, the streams ``ln S``: several times what an oracle that
knows both rates and the change's step needs. ``benchmarks/RESULTS.md`` gives the
delays beside that oracle's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import betaln, xlogy

#: log B(½, ½) = log π: the KT mixture's normaliser.
_LOG_BETA_HALF = math.log(math.pi)


def log_kt(failures: np.ndarray | int, asked: np.ndarray | int) -> np.ndarray:
    """log of the Krichevsky–Trofimov probability of a binary sequence with ``failures``
    ones in ``asked``: ∫ p^m (1 − p)^(n − m) Beta(p; ½, ½) dp = B(m + ½, n − m + ½) / B(½, ½)."""
    m, n = np.asarray(failures, float), np.asarray(asked, float)
    return betaln(m + 0.5, n - m + 0.5) - _LOG_BETA_HALF


def log_max_likelihood(failures: np.ndarray | int, asked: np.ndarray | int) -> np.ndarray:
    """log sup_p p^m (1 − p)^(n − m) = m log(m/n) + (n − m) log(1 − m/n) (0 log 0 = 0)."""
    m, n = np.asarray(failures, float), np.asarray(asked, float)
    safe = np.maximum(n, 1.0)
    return xlogy(m, m / safe) + xlogy(n - m, (n - m) / safe)


def log_start_weight(k: np.ndarray | int) -> np.ndarray:
    """log w_k, w_k = ln 2 · (1/ln k − 1/ln(k + 1)) for k ≥ 2 (they sum to 1)."""
    k = np.asarray(k, float)
    return np.log(math.log(2) * (1 / np.log(k) - 1 / np.log(k + 1)))


@dataclass(frozen=True)
class ChangeEvidence:
    """One stream's evidence after its latest step."""

    log_e: float
    """log E(t), the e-process (natural log; −inf before a second step)."""
    change_step: int | None
    """The start k contributing most to E(t): where the change most likely began."""
    before: tuple[int, int]
    """(failures, asked) before ``change_step``."""
    after: tuple[int, int]
    """(failures, asked) from ``change_step`` on."""


def change_evidence(counts: Sequence[tuple[int, int]]) -> ChangeEvidence:
    """The e-process E(t) of one stream after its steps' ``(failures, asked)`` (see the
    module docstring), with the most likely change step."""
    failures = np.array([c[0] for c in counts], float)
    asked = np.array([c[1] for c in counts], float)
    if len(counts) < 2 or asked.sum() == 0:
        total = (int(failures.sum()), int(asked.sum()))
        return ChangeEvidence(-math.inf, None, total, (0, 0))
    m_to, n_to = np.cumsum(failures), np.cumsum(asked)
    m_all, n_all = m_to[-1], n_to[-1]
    starts = np.arange(2, len(counts) + 1)  # k: the first step of the new rate (1-based)
    m_before, n_before = m_to[starts - 2], n_to[starts - 2]
    terms = (log_kt(m_before, n_before) + log_kt(m_all - m_before, n_all - n_before)
             - log_max_likelihood(m_all, n_all) + log_start_weight(starts))
    best = int(np.argmax(terms))
    return ChangeEvidence(
        log_e=float(np.logaddexp.reduce(terms)), change_step=int(starts[best]),
        before=(int(m_before[best]), int(n_before[best])),
        after=(int(m_all - m_before[best]), int(n_all - n_before[best])))


def combined_log_e(log_es: Sequence[float]) -> float:
    """log of the average of the streams' e-values (a Bonferroni split of α over them)."""
    if not log_es:
        return -math.inf
    return float(np.logaddexp.reduce(np.array(log_es, float)) - math.log(len(log_es)))


def alarm(log_e: float, alpha: float) -> bool:
    """Whether E reached 1/α (Ville: under no change, the chance it ever does is ≤ α)."""
    return log_e >= -math.log(alpha)


def largest_log_e() -> float:
    """The largest log e-value shown and compared: e^700, near where a float ends; an
    alarm threshold past it could never be reached as fbi stores E."""
    return 700.0
