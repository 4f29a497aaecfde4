"""MultiQ&A metrics on 1,000,000 answers, in-process and through `fbi robustness score`.

    python benchmarks/multiqa_metrics.py [--questions 200000] [--variants 5]
    python benchmarks/multiqa_metrics.py --cli [--questions 200000] [--variants 5]

In-process: answers are drawn so that questions differ in difficulty, and every answer is
free text of its own question (no answer is shared between questions: the case that made
a questions × distinct-answers grid for Fleiss' κ need 734 GiB); the 1,000 permutation
aggregates are included. Reports the time and the peak resident memory of the process.

--cli: writes answers tables (Parquet, every answer distinct text) at a tenth of the size
and at the full size, once with a ``correct`` column and once with ``gold`` only (so fbi
computes token-F1 correctness row by row), and times `fbi robustness score` on each in a
fresh process that reports its own peak RSS. Target: ≤ 30 s and ≤ 2 GB at 1,000,000.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from peak_rss import IMPORTABLE_IN_CHILD, peak_rss_mb

#: Runs `fbi robustness score` in this process and prints its peak RSS (MB) last.
_MEASURED_CLI = IMPORTABLE_IN_CHILD + """
from fbi.cli import main
from peak_rss import peak_rss_mb
try:
    main(["robustness", "score", sys.argv[1]], standalone_mode=False)
finally:
    print("peak_rss_mb", peak_rss_mb(), file=sys.stderr)
"""


def free_text_answers(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    difficulty = rng.random(n)
    right = rng.random((n, k)) > difficulty[:, None]
    wrong = rng.integers(1, 4, size=(n, k))
    answers = np.where(right, "gold", np.char.add("wrong-", wrong.astype(str)))
    answers = np.char.add(answers, np.repeat(np.arange(n).astype(str)[:, None], k, axis=1))
    return right, answers


def in_process(n: int, k: int) -> dict:
    from fbi.metrics import multiqa_metrics

    right, answers = free_text_answers(n, k, np.random.default_rng(0))
    started = time.perf_counter()
    result = multiqa_metrics(right, answers, permutations_count=1000)
    seconds = time.perf_counter() - started
    peak_mb = peak_rss_mb()
    return {"answers": n * k, "seconds": round(seconds, 2), "peak_rss_mb": round(peak_mb),
            **{key: round(v, 4) if isinstance(v, float) else v
               for key, v in result.model_dump().items()}}


def through_cli(n: int, k: int) -> list[dict]:
    import pandas as pd

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for questions in (n // 10, n):
            right, answers = free_text_answers(questions, k, np.random.default_rng(0))
            frame = pd.DataFrame({
                "item_id": np.repeat(np.arange(questions), k).astype(str),
                "variant": np.tile(np.arange(k), questions),
                "answer": np.char.replace(answers, "-", " ").ravel()})
            for column in ("correct", "gold"):
                table = frame.copy()
                if column == "correct":
                    table["correct"] = right.ravel()
                else:
                    table["gold"] = np.char.add("gold", np.repeat(
                        np.arange(questions).astype(str), k))
                path = Path(folder) / f"{questions}-{column}.parquet"
                table.to_parquet(path)
                started = time.perf_counter()
                done = subprocess.run([sys.executable, "-c", _MEASURED_CLI, str(path)],
                                      capture_output=True, text=True)
                seconds = time.perf_counter() - started
                if done.returncode:
                    raise SystemExit(f"fbi robustness score failed:\n{done.stderr}")
                peak = float(done.stderr.rsplit("peak_rss_mb", 1)[1])
                rows.append({"answers": questions * k, "correctness from": column,
                             "seconds": round(seconds, 2), "peak_rss_mb": round(peak)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=200_000)
    parser.add_argument("--variants", type=int, default=5)
    parser.add_argument("--cli", action="store_true",
                        help="time `fbi robustness score` on written tables instead")
    args = parser.parse_args()
    if args.cli:
        print(json.dumps(through_cli(args.questions, args.variants), indent=2))
    else:
        print(json.dumps(in_process(args.questions, args.variants), indent=2))


if __name__ == "__main__":
    main()
