"""Human-label agreement (`fbi report --human`) as the labelled instances grow: time and
peak RSS of `human_agreement` for N instances with one verdict and one score each.

    python benchmarks/human_agreement_scale.py N      (e.g. 2400, then 24000)

Run each N in its own process (peak RSS is the process's); copy the figures to
benchmarks/RESULTS.md with machine and date.
"""

import random
import sys
import time

from peak_rss import peak_rss_mb

from fbi.judge._read import JudgmentVerdict
from fbi.metrics import HumanLabel, human_agreement
from fbi.taxonomy import category_names, get_category


def main() -> None:
    n = int(sys.argv[1])
    categories = category_names()[:-1]  # the 22, without score-invariant
    rng = random.Random(0)
    judgments, labels = [], []
    for i in range(n):
        category = categories[i % len(categories)]
        ability = get_category(category).ability
        scores = {"gold": rng.randint(1, 10), "perturbed": rng.randint(1, 10)}
        judgments += [JudgmentVerdict(f"i{i}", "j", "vanilla", "single", role, ability,
                                      category, "ok", score, None, (1, 10), 0)
                      for role, score in scores.items()]
        labels.append(HumanLabel(f"i{i}", "ann", rng.choice("ab"), rng.randint(1, 10)))
    start = time.perf_counter()
    human_agreement(judgments, labels)
    peak = round(peak_rss_mb())
    print(f"{n} instances: {time.perf_counter() - start:.2f} s, peak RSS {peak} MB")


if __name__ == "__main__":
    main()
