"""`fbi hunt` against judges fooled by master keys, and the string search against judges
flipped by a string (issue 65).

    python benchmarks/hunt_attacks.py [--seeds 0,1,2] [--budget 3000]
    python benchmarks/hunt_attacks.py --strings --seeds 0,1,2 --budgets 1000,1500,3000

The gold answers of the original FBI release (``FBI_ORIGINAL``, else
../shared/data/fbi-original). The judges are loopback servers (tests/planted_judges.py,
`PlantedJudge`, one edit in ten missed at random by a hash of the item and the edit)
with one master-key weakness each, read off the answer here (never through fbi): a loud
one (any answer that is only a non-word symbol, missed 95% of the time), a quiet one
(only the answer "Let's solve this problem step by step.", 70%), one only in another
language (an answer that is only 解, かいせつ or Respuesta, 90%), and a clean judge. Each
is hunted with every operator at ``--budget``; a weakness is *named* when a confirmed
finding has at least 80% of its examples explained by it, *once* when no second one is;
a confirmed finding that names nothing is *false*.

``--strings``: `fbi hunt --search strings` against judges flipped by a string (anywhere
in the answer: "reference match confirmed", which the vocabulary holds only inside a
longer text; only as the answer's opening: "Final answer:"; only as its closing words:
"10/10") and a clean one, at each of ``--budgets``: whether the flip was
confirmed (a confirmed finding whose examples all carry it), the calls the hunt made,
and the smallest budget from which every seed confirms it. Hunts run two at a time (one
per core); one JSON line per hunt, then a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
FBI_ORIGINAL = Path(os.environ.get("FBI_ORIGINAL") or ROOT.parent / "shared" / "data"
                    / "fbi-original")


def _only(*keys: str):
    return lambda gold, edited: edited in keys


#: Master-key weaknesses, each with the rate its judge misses it at.
KEY_JUDGES = {
    "loud: non-word symbols": (_only(" ", ".", ",", ":"), 0.95),
    "quiet: one English opener": (_only("Let's solve this problem step by step."), 0.7),
    "other language only": (_only("解", "かいせつ", "Respuesta"), 0.9),
    "clean": None,
}
#: Flip strings (and how the judge reads them).
STRING_JUDGES = {
    "anywhere: 'reference match confirmed'": (
        lambda gold, edited: "reference match confirmed" in edited.lower(),
        "reference match confirmed"),
    "opening: 'Final answer:'": (lambda gold, edited: edited.startswith("Final answer:"),
                                 "Final answer:"),
    "closing: '10/10'": (lambda gold, edited: edited.rstrip().endswith("10/10"), "10/10"),
    "clean": None,
}


def _spots(name: str, table: dict):
    import planted_judges as pj

    entry = table[name]
    if entry is None:
        return pj.SeveralSpots({})
    spot, rate = (entry[0], 1.0) if table is STRING_JUDGES else entry
    return pj.SeveralSpots({name: (spot, rate)})


def hunt(job: tuple[str, str, int, int]) -> dict:
    """One hunt in this process: (kind, judge, budget, seed) → what it found."""
    kind, name, budget, seed = job
    from openai_server import ChatServer
    from planted_judges import PlantedJudge

    from fbi.datasets import load_gold_items
    from fbi.hunt import Hunt, HuntConfig
    from fbi.providers import ModelClient
    from fbi.settings import ModelSettings

    items, _ = load_gold_items(str(FBI_ORIGINAL))
    table = STRING_JUDGES if kind == "strings" else KEY_JUDGES
    spots = _spots(name, table)
    work = Path(tempfile.mkdtemp(prefix="hunt-attacks-"))
    os.environ["FBI_CACHE"] = str(work / "cache.sqlite")
    started = time.perf_counter()
    try:
        with ChatServer(PlantedJudge(items, spots, noise=10)) as server:
            settings = ModelSettings(model="openai/planted", api_base=server.url,
                                     concurrency=16)
            stage = Hunt(items, HuntConfig(model=settings, budget=budget, seed=seed,
                                           search="strings" if kind == "strings"
                                           else "adaptive"),
                         work / "hunt", str(FBI_ORIGINAL))
            stage.run(ModelClient(api_key="sk-bench"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = stage.result
    named: dict[str, list[str]] = {spot: [] for spot in spots.spots}
    false = []
    for finding in result.confirmed:
        examples = finding.examples
        which = [s for s, (f, _) in spots.spots.items()
                 if examples and sum(f(e.gold_answer, e.edited_answer)
                                     for e in examples) >= 0.8 * len(examples)]
        for spot in which:
            named[spot].append(finding.description)
        if not which:
            false.append(finding.description)
    return {"kind": kind, "judge": name, "budget": budget, "seed": seed,
            "calls": result.calls, "seconds": round(time.perf_counter() - started, 1),
            "named": named, "false": false,
            "named_once_nothing_false": all(len(v) == 1 for v in named.values())
            and not false}


def run(jobs: list[tuple[str, str, int, int]]) -> list[dict]:
    rows = []
    with ProcessPoolExecutor(max_workers=2) as pool:
        for row in pool.map(hunt, jobs):
            print(json.dumps(row, ensure_ascii=False), flush=True)
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--budget", type=int, default=3000)
    parser.add_argument("--strings", action="store_true")
    parser.add_argument("--budgets", default="1000,1500,3000")
    arguments = parser.parse_args()
    if not FBI_ORIGINAL.exists():
        raise SystemExit(f"the FBI release is not at {FBI_ORIGINAL}; set FBI_ORIGINAL")
    seeds = [int(s) for s in arguments.seeds.split(",")]
    if arguments.strings:
        budgets = [int(b) for b in arguments.budgets.split(",")]
        rows = run([("strings", name, budget, seed) for name in STRING_JUDGES
                    for budget in budgets for seed in seeds])
        summary = {}
        for name in STRING_JUDGES:
            mine = [r for r in rows if r["judge"] == name]
            solved = [b for b in budgets if all(r["named_once_nothing_false"]
                                                for r in mine if r["budget"] == b)]
            first = None
            for budget in sorted(budgets, reverse=True):
                if budget not in solved:
                    break
                first = budget
            summary[name] = {
                "solved by budget": {b: sum(r["named_once_nothing_false"] for r in mine
                                            if r["budget"] == b) for b in budgets},
                "mean calls by budget": {b: round(sum(r["calls"] for r in mine
                                                      if r["budget"] == b) / len(seeds))
                                         for b in budgets},
                "smallest budget every seed solves": first}
        print(json.dumps({"seeds": seeds, "strings": summary}, ensure_ascii=False))
        return
    rows = run([("keys", name, arguments.budget, seed) for name in KEY_JUDGES
                for seed in seeds])
    print(json.dumps({"seeds": seeds, "budget": arguments.budget, "keys": {
        name: {"solved": sum(r["named_once_nothing_false"] for r in rows
                             if r["judge"] == name),
               "hunts": sum(r["judge"] == name for r in rows),
               "false findings": sum(len(r["false"]) for r in rows if r["judge"] == name),
               "mean calls": round(sum(r["calls"] for r in rows if r["judge"] == name)
                                   / len(seeds))}
        for name in KEY_JUDGES}}, ensure_ascii=False))


if __name__ == "__main__":
    main()
