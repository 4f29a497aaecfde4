"""The pre-screen's wrong-kind check (failure mode ii) over the FBI release.

    python benchmarks/prescreen_kinds.py [--sample 20] [--seed 0]

For the categories whose kind a word diff shows (spelling, grammar, number errors,
entity errors): how many of the release's perturbed answers are flagged ``wrong-kind``,
per category, and a seeded sample of flagged candidates with their first changes, to
check by hand (the verdicts go into benchmarks/RESULTS.md with machine and date).
``--swap`` files each candidate under another category (spelling ↔ grammar, number
errors ↔ entity errors), the paper's failure mode ii made on purpose: how many the
check then flags is its recall.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FBI_ORIGINAL = ROOT.parent / "shared" / "data" / "fbi-original"


def main() -> None:
    from fbi.datasets import load_dataset
    from fbi.perturb import EXPECTED_KIND, change_kinds, prescreen

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--swap", action="store_true",
                        help="file each candidate under the other category of its pair")
    args = parser.parse_args()
    swap = {"spelling": "grammar", "grammar": "spelling", "number-errors": "entity",
            "entity": "number-errors"}
    if not FBI_ORIGINAL.is_dir():
        raise SystemExit(f"needs the FBI release at {FBI_ORIGINAL}")
    instances = [i for i in load_dataset(str(FBI_ORIGINAL)).instances
                 if i.category in EXPECTED_KIND]
    totals, flagged = Counter(), []
    for instance in instances:
        if args.swap:
            instance = instance.model_copy(update={"category": swap[instance.category]})
        totals[instance.category] += 1
        flags = [f for f in prescreen(instance.category, instance.gold_answer,
                                      instance.perturbed_answer, None)
                 if f.startswith("wrong-kind")]
        if flags:
            flagged.append((instance, flags[0]))
    counts = Counter(instance.category for instance, _ in flagged)
    print(json.dumps({category: {"instances": totals[category], "flagged": counts[category],
                                 "share": round(counts[category] / totals[category], 3)}
                      for category in sorted(totals)}, indent=2))
    for instance, flag in random.Random(args.seed).sample(flagged,
                                                          min(args.sample, len(flagged))):
        changes = change_kinds(instance.gold_answer, instance.perturbed_answer)[:4]
        print(f"\n{instance.id} [{instance.category}] {flag}")
        for kind, removed, inserted in changes:
            print(f"    {kind:8} {removed[:50]!r} → {inserted[:50]!r}")


if __name__ == "__main__":
    main()
