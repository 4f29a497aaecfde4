"""How often `fbi gate` fails an unchanged judge, and how often it catches a regression
(issue 53): simulated suites, the gate's own comparison (`fbi.gate.compare_outcomes`).

    python benchmarks/gate_power.py [--runs 1000]

Each instance of a suite has its own chance of being missed, drawn once per suite from a
Beta distribution around its category's miss rate (0.2, spread 0.15); a run of the judge
misses it or not with that chance, independently of other runs (a judge sampled at a
temperature, or a provider's nondeterminism). Unchanged: the candidate is another run of
the same judge. Regressed: the candidate's chance on every instance of one category is
15 points higher. A single-answer suite of 200 instances is 400 calls; it is split over
1, 4 or 22 categories. Defaults of the gate: α = 0.05, --max-regression 0.05. The input
grown 10× is 2,000 instances (4,000 calls); time and peak RSS of the whole invocation are
printed. Results to stdout as JSON; copy them to RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from peak_rss import peak_rss_mb

from fbi.gate import compare_outcomes
from fbi.metrics import InstanceOutcome


def outcomes(missed: np.ndarray, categories: list[str]) -> list[InstanceOutcome]:
    return [InstanceOutcome(instance_id=f"i{k}", judge="j", strategy="vanilla",
                            paradigm="single", ability="factual", category=category,
                            outcome="undetected" if miss else "detected")
            for k, (miss, category) in enumerate(zip(missed, categories, strict=True))]


def failure_rate(runs: int, instances: int, n_categories: int, rise: float,
                 seed: int) -> float:
    rng = np.random.default_rng(seed)
    categories = [f"c{k % n_categories}" for k in range(instances)]
    hit = np.array([c == "c0" for c in categories])
    failed = 0
    for _ in range(runs):
        chance = rng.beta(0.2 * 5.5, 0.8 * 5.5, size=instances)  # mean 0.2, sd ≈ 0.15
        before = rng.uniform(size=instances) < chance
        after = rng.uniform(size=instances) < np.minimum(1, chance + rise * hit)
        rows = compare_outcomes(outcomes(before, categories), outcomes(after, categories))
        failed += any(row.regressed for row in rows)
    return failed / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--instances", type=int, default=200)
    args = parser.parse_args()
    started = time.perf_counter()
    found = {}
    for n_categories in (1, 4, 22):
        found[f"{n_categories} categories"] = {
            "false failures (unchanged)": failure_rate(args.runs, args.instances,
                                                       n_categories, 0.0, 1),
            "power (+15 points in one category)": failure_rate(args.runs, args.instances,
                                                                n_categories, 0.15, 2)}
    print(json.dumps({"runs": args.runs, "instances": args.instances,
                      "calls": 2 * args.instances, "results": found,
                      "seconds": round(time.perf_counter() - started, 1),
                      "peak_rss_mb": peak_rss_mb()}, indent=2))


if __name__ == "__main__":
    main()
