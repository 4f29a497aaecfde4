"""The word diff on long answers (issue 50): fbi's near-linear diff against difflib, the
diff it replaced, on the same inputs in the same invocation.

    python benchmarks/word_diff_scale.py [--words 800,8000,80000] [--baseline-up-to 8000]

Three shapes per size, each a gold answer and a perturbed one of that many words:
*prose* (sentences of a 2,000-word vocabulary, one word in fifty changed — a long answer
with scattered edits), *rewritten* (the perturbed answer's every sentence shuffled: no
long common run, the shape that made difflib slowest) and *repeated* (one sentence over
and over, a word changed every hundred: no word occurs once, so no anchor). The figure
is the seconds of ``word_diff`` (tokenising included), with difflib's SequenceMatcher
opcodes over the same tokens beside it up to ``--baseline-up-to`` words (past it difflib
takes minutes). The diff's output is checked to rebuild both answers. Prints one JSON
line per case, then this process's peak RSS.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from peak_rss import peak_rss_mb

from fbi.diffing import word_diff


def sentences(words: int, rng: random.Random) -> list[str]:
    vocabulary = [f"w{n}" for n in range(2000)]
    out, total = [], 0
    while total < words:
        length = rng.randint(8, 20)
        out.append(" ".join(rng.choice(vocabulary) for _ in range(length)) + ".")
        total += length
    return out


def case(shape: str, words: int, seed: int = 0) -> tuple[str, str]:
    rng = random.Random(seed)
    if shape == "repeated":
        gold = ["The judge reads the answer and gives it a score."] * (words // 10)
        perturbed = [s.replace("score", "grade") if n % 10 == 0 else s
                     for n, s in enumerate(gold)]
        return " ".join(gold), " ".join(perturbed)
    gold = sentences(words, rng)
    if shape == "rewritten":
        perturbed = gold[:]
        rng.shuffle(perturbed)
    else:
        perturbed = [" ".join(f"x{rng.randrange(99)}" if rng.random() < 0.02 else w
                              for w in s.split()) for s in gold]
    return " ".join(gold), " ".join(perturbed)


def timed(function) -> tuple[float, object]:
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--words", default="800,8000,80000")
    parser.add_argument("--baseline-up-to", type=int, default=8000)
    arguments = parser.parse_args()
    for words in (int(w) for w in arguments.words.split(",")):
        for shape in ("prose", "rewritten", "repeated"):
            gold, perturbed = case(shape, words)
            seconds, segments = timed(lambda g=gold, p=perturbed: word_diff(g, p))
            rebuilt = ("".join(t for op, t in segments if op != "insert"),
                       "".join(t for op, t in segments if op != "delete"))
            assert rebuilt == (gold, perturbed), "the diff does not rebuild the answers"
            row = {"words": words, "shape": shape, "fbi_s": round(seconds, 3)}
            if words <= arguments.baseline_up_to:
                a, b = re.findall(r"\s+|[^\s]+", gold), re.findall(r"\s+|[^\s]+", perturbed)
                row["difflib_s"] = round(timed(lambda a=a, b=b: difflib.SequenceMatcher(
                    None, a, b, autojunk=False).get_opcodes())[0], 3)
            print(json.dumps(row), flush=True)
    print(json.dumps({"peak_rss_mb": round(peak_rss_mb(), 1)}))


if __name__ == "__main__":
    main()
