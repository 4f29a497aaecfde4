"""`fbi hunt` on judges with several blind spots at once, against a uniform grid (issues 40
and 49).

    python benchmarks/hunt_search.py [--budgets 1000,2000,3000,4500,6000] [--seeds 0,1]
    python benchmarks/hunt_search.py --clean --seeds 0,1,...,19
    python benchmarks/hunt_search.py --power --seeds 0,...,19
    python benchmarks/hunt_search.py --scale --budgets 3000,30000

The gold answers of the original FBI release (``FBI_ORIGINAL``, else
../shared/data/fbi-original). The judges are loopback servers (tests/planted_judges.py,
`SEVERAL`), each with one loud blind spot (missed 95% of the time, a fifth to a third of
the edits) and three or four quiet ones (missed 70% of the time, each 2–8% of the edits),
and one edit in ten missed at random besides: numbers changed / inside parentheses /
negation / authority claims; the answer's last third / headings / quotation marks /
named entities / self-praise; changes of five characters or fewer / bold text / modal
verbs / the answer's last tenth. Each blind spot is read off the text its own way
(difflib, brackets counted by hand), never through fbi's predicates.

*Findings per planted cause*: a hunt's confirmed findings over its planted spots (issue
65: 1.0 when each spot is one finding). A planted blind spot is *named* when a confirmed
finding has at least 80% of its examples explained by it; *named once* when no second
confirmed finding is; a confirmed finding that names no planted spot is *false*. Each
judge is hunted at each budget by the adaptive search and by the grid (every probe a
random edit; the same candidates and confirmation), and the smallest budget at which
every planted spot is named once with nothing false is reported per search. ``--clean``:
a judge with only the random misses, over seeds (confirmed findings are all false).
``--power``: a judge with the loud numbers spot and one quiet spot (inside parentheses)
missed 40 points above the baseline, over seeds at the default budget. ``--scale``: time
and peak RSS of whole ``fbi hunt`` processes. Hunts run two at a time (one per core);
prints one JSON line per hunt.
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
CLEAN = "random misses only"
POWER = "numbers, parentheses at +40 points"


def judge_named(name: str):
    import planted_judges as pj

    if name == CLEAN:
        return pj.SeveralSpots({})
    if name == POWER:  # 10% random and 45% spot misses: 1 − 0.9·0.55 ≈ 50%, 40 points up
        return pj.SeveralSpots({"numbers": (pj.misses_number_changes, 0.95),
                                "parentheses": (pj.misses_inside_parentheses, 0.45)})
    return pj.SEVERAL[name]


def hunt(job: tuple[str, str, int, int]) -> dict:
    """One hunt in this process: (judge, search, budget, seed) → what it found."""
    name, search, budget, seed = job
    from openai_server import ChatServer
    from peak_rss import peak_rss_mb
    from planted_judges import PlantedJudge

    from fbi.datasets import load_gold_items
    from fbi.hunt import Hunt, HuntConfig
    from fbi.providers import ModelClient
    from fbi.settings import ModelSettings

    items, _ = load_gold_items(str(FBI_ORIGINAL))
    spots = judge_named(name)
    work = Path(tempfile.mkdtemp(prefix="hunt-bench-"))
    os.environ["FBI_CACHE"] = str(work / "cache.sqlite")
    started = time.perf_counter()
    try:
        with ChatServer(PlantedJudge(items, spots, noise=10)) as server:
            settings = ModelSettings(model="openai/planted", api_base=server.url,
                                     concurrency=16)
            stage = Hunt(items, HuntConfig(model=settings, budget=budget, search=search,
                                           seed=seed), work / "hunt", str(FBI_ORIGINAL))
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
    return {"judge": name, "search": search, "budget": budget, "seed": seed,
            "calls": result.calls, "seconds": round(time.perf_counter() - started, 1),
            "named": named, "false": false,
            "every_spot_named_once": all(len(v) == 1 for v in named.values()) and not false,
            "findings_per_cause": round(len(result.confirmed) / len(spots.spots), 2)
            if spots.spots else None,
            "overall_miss_rate": None if result.overall is None
            else round(result.overall.miss_rate or 0, 3),
            "peak_rss_mb": round(peak_rss_mb(), 1)}


def run(jobs: list[tuple[str, str, int, int]]) -> list[dict]:
    rows = []
    with ProcessPoolExecutor(max_workers=2) as pool:
        for row in pool.map(hunt, jobs):
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def scale(budgets: list[int]) -> None:
    """``fbi hunt`` as a user runs it, a child process per budget reporting its own peak
    RSS, against the loopback server's hashed-verdict judge (answering at once)."""
    from openai_server import SCRIPTS, ChatServer
    from run_scale import measured_fbi

    work = Path(tempfile.mkdtemp(prefix="hunt-scale-"))
    try:
        with ChatServer(SCRIPTS["judge"]) as server:
            for budget in budgets:
                env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "COLUMNS": "100",
                       "FBI_CACHE": str(work / f"{budget}.sqlite")}
                measured = measured_fbi("hunt", "--judge", "openai/bench", "--api-base",
                                        server.url, "--dataset", str(FBI_ORIGINAL),
                                        "--budget", str(budget), "--concurrency", "32",
                                        "--no-probe", "--output", str(work / str(budget)),
                                        env=env)
                result = json.loads((work / str(budget) / "hunt.json").read_text())
                print(json.dumps({"budget": budget, "calls": result["calls"],
                                  "seconds": measured["seconds"],
                                  "peak_rss_mb": measured["peak_rss_mb"]}), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    from planted_judges import SEVERAL

    from fbi.hunt import DEFAULT_BUDGET

    parser = argparse.ArgumentParser()
    parser.add_argument("--budgets", default="1000,2000,3000,4500,6000")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--judges", default=",".join(str(i) for i in range(len(SEVERAL))),
                        help="which of planted_judges.SEVERAL, by index")
    parser.add_argument("--clean", action="store_true", help="the judge without blind "
                        "spots over --seeds at the default budget")
    parser.add_argument("--power", action="store_true", help="a quiet spot 40 points "
                        "above the baseline over --seeds at the default budget")
    parser.add_argument("--scale", action="store_true",
                        help="only time and peak RSS of whole `fbi hunt` processes at "
                             "--budgets (e.g. 3000,30000)")
    arguments = parser.parse_args()
    budgets = [int(b) for b in arguments.budgets.split(",")]
    seeds = [int(s) for s in arguments.seeds.split(",")]
    if not FBI_ORIGINAL.exists():
        raise SystemExit(f"the FBI release is not at {FBI_ORIGINAL}; set FBI_ORIGINAL")
    if arguments.scale:
        scale(budgets)
        return
    if arguments.clean or arguments.power:
        name = CLEAN if arguments.clean else POWER
        rows = run([(name, "adaptive", DEFAULT_BUDGET, seed) for seed in seeds])
        key = "false" if arguments.clean else "named"
        print(json.dumps({"judge": name, "seeds": len(rows), "budget": DEFAULT_BUDGET,
                          "confirmed false findings": sum(len(r["false"]) for r in rows),
                          "hunts with a false finding": sum(bool(r["false"]) for r in rows),
                          "quiet spot confirmed": None if arguments.clean else sum(
                              bool(r[key]["parentheses"]) for r in rows)}))
        return
    names = [list(SEVERAL)[int(i)] for i in arguments.judges.split(",")]
    jobs = [(name, search, budget, seed) for search in ("adaptive", "grid")
            for name in names for budget in budgets for seed in seeds]
    rows = run(jobs)
    smallest: dict[str, dict[str, int | None]] = {}
    for search in ("adaptive", "grid"):
        smallest[search] = {}
        for name in names:
            solved = [b for b in budgets if all(
                r["every_spot_named_once"] for r in rows if r["search"] == search
                and r["judge"] == name and r["budget"] == b)]
            # the smallest budget from which every larger one also solves it
            first = None
            for budget in sorted(budgets, reverse=True):
                if budget not in solved:
                    break
                first = budget
            smallest[search][name] = first
    calls = {f"{search} {budget}": {
        "solved": sum(r["every_spot_named_once"] for r in rows
                      if r["search"] == search and r["budget"] == budget),
        "hunts": sum(r["search"] == search and r["budget"] == budget for r in rows),
        "spots named once": sum(len(v) == 1 for r in rows if r["search"] == search
                                and r["budget"] == budget for v in r["named"].values()),
        "mean calls": round(sum(r["calls"] for r in rows if r["search"] == search
                                and r["budget"] == budget) / max(1, len(names) * len(seeds))),
        "findings per planted cause (mean, max)": (
            round(sum(r["findings_per_cause"] for r in rows if r["search"] == search
                      and r["budget"] == budget) / max(1, len(names) * len(seeds)), 2),
            max(r["findings_per_cause"] for r in rows if r["search"] == search
                and r["budget"] == budget))}
        for search in ("adaptive", "grid") for budget in budgets}
    print(json.dumps({"smallest budget naming every planted spot once, nothing false":
                      smallest, "seeds": seeds, "by budget": calls}))


if __name__ == "__main__":
    main()
