"""Rule-engine throughput over every gold answer of the FBI release.

    python benchmarks/rules_throughput.py

Applies every rule category to each of the release's distinct gold answers (each rule
to the answers of its own ability, score-invariant edits to all), pre-screens every
candidate, and reports candidates per second. No model is involved.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from fbi.datasets import load_gold_items
from fbi.perturb import PerturbConfig, plan_jobs, prescreen
from fbi.perturb.rules import NEEDS_LLM, RULES, Declined, _load_families, apply_rule

FBI_ORIGINAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "fbi-original"


def main() -> None:
    _load_families()
    spec = str(FBI_ORIGINAL) if FBI_ORIGINAL.is_dir() else "sample"
    items, rows = load_gold_items(spec)
    jobs, _ = plan_jobs(items, PerturbConfig(engine="rules"))
    jobs = [j for j in jobs if j.category in RULES and j.category not in NEEDS_LLM]
    started = time.perf_counter()
    made = declined = flagged = 0
    for job in jobs:
        try:
            result = apply_rule(job.category, job.item, 0)
        except Declined:
            declined += 1
            continue
        made += 1
        flagged += bool(prescreen(job.category, job.item.gold_answer, result.perturbed,
                                  result.rationale))
    seconds = time.perf_counter() - started
    print(json.dumps({"dataset": spec, "rows": rows, "gold_answers": len(items),
                      "rule_jobs": len(jobs), "candidates": made, "declined": declined,
                      "flagged": flagged, "seconds": round(seconds, 2),
                      "candidates_per_s": round(made / seconds, 1),
                      "jobs_per_s": round(len(jobs) / seconds, 1)}, indent=2))


if __name__ == "__main__":
    main()
