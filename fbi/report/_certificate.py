"""The certificates of `fbi report --human` as one table (they are made by
`fbi.trust.certificates`)."""

from __future__ import annotations

from collections.abc import Sequence

from fbi.trust import Certificate

CERTIFICATE_NOTE = (
    "Certified: agreement with people ≥ the target, with probability ≥ 1 − δ, above the "
    "confidence threshold shown (fixed-sequence testing with exact binomial bounds on the "
    "labelled instances, \"Trust or Escalate\"), and the share of items above it; it "
    "assumes the labelled instances and the items judged later are alike "
    "(exchangeable). Blind spots: categories whose miss rate's 95% interval lies above "
    "one half, a hunt's confirmed findings, and the score-invariant rewrites when the "
    "share of them penalised has its interval above one half.")


def certificate_table(certificates: Sequence[Certificate]) -> tuple[list[str], list[list[str]]]:
    """The certificates as one table."""
    def share(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.1f}%"

    # What is certified is "agreement ≥ target" (with probability 1 − δ), not the bound
    # at the chosen threshold: that threshold was picked by the same data, and over 2,000
    # planted draws the true agreement fell below it in 13% at δ = 0.1 (issue 53).
    header = ["judge", "strategy", "certified", "coverage", "threshold",
              "blind spots", "$ / 1,000 judgments"]
    rows = []
    for c in certificates:
        trusted = c.trust if c.trust is not None and c.trust.certified else None
        rows.append([c.judge, c.strategy,
                     f"agreement ≥ {share(trusted.target)} (δ = {trusted.delta:g})"
                     if trusted else "not certified",
                     share(trusted.coverage) if trusted else "–",
                     f"{trusted.threshold:.2f}" if trusted else "–",
                     ", ".join(s.name for s in c.blind_spots[:3]) or "none found",
                     "–" if c.cost_per_1000 is None else f"{c.cost_per_1000:.2f}"])
    return header, rows
