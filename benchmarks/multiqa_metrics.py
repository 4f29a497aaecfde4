"""All MultiQ&A metrics on 1,000,000 answers (200,000 questions × 5 variants).

    python benchmarks/multiqa_metrics.py [--questions 200000] [--variants 5]

Answers are drawn so that questions differ in difficulty and in how many distinct
answers they get; the 1,000 permutation aggregates are included. Reports the time and
the peak resident memory of the process. Target: under 30 s and 2 GB.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=200_000)
    parser.add_argument("--variants", type=int, default=5)
    args = parser.parse_args()
    from fbi.metrics import multiqa_metrics

    rng = np.random.default_rng(0)
    n, k = args.questions, args.variants
    difficulty = rng.random(n)
    # the gold answer with probability 1 − difficulty, else one of three wrong answers
    right = rng.random((n, k)) > difficulty[:, None]
    wrong = rng.integers(1, 4, size=(n, k))
    answers = np.where(right, "gold", np.char.add("wrong-", wrong.astype(str)))
    answers = np.char.add(answers, np.repeat(np.arange(n).astype(str)[:, None], k, axis=1))
    started = time.perf_counter()
    result = multiqa_metrics(right, answers, permutations_count=1000)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"answers": n * k, "seconds": round(seconds, 2),
                      "peak_rss_mb": round(peak_mb), **{key: round(v, 4) if isinstance(
                          v, float) else v for key, v in result.items()}}, indent=2))


if __name__ == "__main__":
    main()
