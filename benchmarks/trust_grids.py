"""How much each threshold grid of `fbi trust` certifies, and whether it keeps the
guarantee (issue 53): simulated judges whose truth is known, many calibration sets drawn
from each, every grid run on the same draws.

    python benchmarks/trust_grids.py [--draws 400] [--items 400]

Each judge has a uniform confidence c and is wrong with probability p(c); the risk of the
items at or above λ is the mean of p over [λ, 1], worked in closed form below. For each
grid: the share of draws certified, the mean coverage (share of items at or above λ̂,
0 when nothing is certified) beside the best coverage any threshold could have (the
lowest λ whose risk is ≤ α), and the share of draws whose λ̂ has a risk above α (the
guarantee allows δ). The baseline is ``distinct``, fbi's rule before issue 53, on the
same draws. ``--items`` 10× (4,000) is the input grown tenfold; time and peak RSS of
the whole invocation are printed with it. Results to stdout as JSON; copy them to
RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from peak_rss import peak_rss_mb

from fbi.trust import TrustItem, calibrate

GRIDS = ("distinct", "coarse", "authors", "multistart")

#: name → (p(c): the chance of a disagreement at confidence c, risk(λ): its mean over
#: [λ, 1], target agreement)
JUDGES = {
    # errs rarely but not never at the top: one early error ends a single sequence
    "rare errors at the top (p = 0.02 + 0.3(1 − c)², target 0.9)": (
        lambda c: 0.02 + 0.3 * (1 - c) ** 2, lambda lam: 0.02 + 0.1 * (1 - lam) ** 2, 0.9),
    "errors growing linearly (p = 0.5 − 0.5c, target 0.85)": (
        lambda c: 0.5 - 0.5 * c, lambda lam: 0.25 * (1 - lam), 0.85),
    "a strong judge (p = 0.04 + 0.2(1 − c)², target 0.9)": (
        lambda c: 0.04 + 0.2 * (1 - c) ** 2, lambda lam: 0.04 + 0.2 * (1 - lam) ** 2 / 3,
        0.9),
}


def items_of(confidence, wrong) -> list[TrustItem]:
    return [TrustItem((f"i{k}", "s"), "a", float(c), "b" if w else "a")
            for k, (c, w) in enumerate(zip(confidence, wrong, strict=True))]


def best_coverage(risk, alpha: float) -> float:
    """The coverage of the lowest λ whose risk is at most α (risk falls as λ grows)."""
    grid = np.linspace(0, 1, 100_001)
    holding = grid[np.array([risk(lam) for lam in grid]) <= alpha]
    return float(1 - holding.min()) if len(holding) else 0.0


def run(draws: int, items: int, delta: float = 0.1) -> dict:
    found = {}
    for name, (p, risk, target) in JUDGES.items():
        rng = np.random.default_rng(0)
        tally = {grid: {"certified": 0, "coverage": 0.0, "violations": 0} for grid in GRIDS}
        for _ in range(draws):
            confidence = rng.uniform(size=items)
            wrong = rng.uniform(size=items) < p(confidence)
            labelled = items_of(confidence, wrong)
            for grid in GRIDS:
                result = calibrate(labelled, target, delta, grid=grid)
                if result.certified:
                    row = tally[grid]
                    row["certified"] += 1
                    row["coverage"] += float((confidence >= result.threshold).mean())
                    row["violations"] += risk(result.threshold) > 1 - target
        found[name] = {
            "best coverage": round(best_coverage(risk, 1 - target), 3),
            **{grid: {"certified": f"{row['certified']}/{draws}",
                      "mean coverage": round(row["coverage"] / draws, 3),
                      "violations": round(row["violations"] / draws, 3)}
               for grid, row in tally.items()}}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--items", type=int, default=400)
    args = parser.parse_args()
    started = time.perf_counter()
    found = run(args.draws, args.items)
    print(json.dumps({"draws": args.draws, "items": args.items, "delta": 0.1,
                      "results": found, "seconds": round(time.perf_counter() - started, 1),
                      "peak_rss_mb": peak_rss_mb()}, indent=2))


if __name__ == "__main__":
    main()
