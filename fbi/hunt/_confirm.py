"""Confirming candidates on held-out instances, and the correction for the search's many
hypotheses (issue 40).

A candidate found on the search's instances is tested again on instances the search never
saw: its edits there against the baseline's edits there (plain error edits, one error rule
and nothing added, outside the candidate), by a one-sided Fisher exact test (Fisher,
*The Design of Experiments*, 1935; scipy's ``fisher_exact``). The held-out data is new,
so the search's choice cannot bias the test; the p-values are still adjusted for every
hypothesis the search tested (each description it tallied), by Holm's step-down
procedure (Holm, "A Simple Sequentially Rejective Multiple Test Procedure", Scand. J.
Statist. 6, 1979), which holds the family-wise error rate at ``alpha``: the chance that
any confirmed blind spot is false is at most ``alpha``. A description the search tested
but did not take to confirmation counts with p = 1.
"""

from __future__ import annotations

from collections.abc import Sequence


def holm(p_values: Sequence[float], hypotheses: int) -> list[float]:
    """Holm-adjusted p-values of ``p_values``, in their order, for a family of
    ``hypotheses`` tests of which these are the only ones with p < 1: the i-th smallest
    of m becomes max over j ≤ i of min(1, (m − j + 1) · p_(j))."""
    m = max(hypotheses, len(p_values))
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
