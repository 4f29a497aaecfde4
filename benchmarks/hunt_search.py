"""`fbi hunt` against a uniform grid, on loopback judges with planted blind spots (issue 40).

    python benchmarks/hunt_search.py [--budgets 250,500,1000,2000,3000]
    python benchmarks/hunt_search.py --scale --budgets 3000,30000

The gold answers of the original FBI release (``FBI_ORIGINAL``, else
../shared/data/fbi-original). Six loopback judges (tests/planted_judges.py), each
missing one edit in ten at random besides its blind spot: number changes inside list
items, any edit in the answer's last third, answers made half again as long (padding,
injected text), a unit put in another's place, changes of at most five characters in the
first sentence, and none at all. Each judge is hunted at
each budget twice, in one process: by the adaptive search and by a uniform grid over the
same roots (the same probes for each, no refinement), both with the same candidate
rules and held-out confirmation. A planted blind spot counts as confirmed when most of a
confirmed finding's examples (edits the judge missed) are edits it names; a confirmed
finding of which they are not is a false confirmation (on the clean judge, any confirmed
finding).
Prints one JSON line per run, then per search the smallest budget at which every planted
blind spot was confirmed with no false one, and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from openai_server import ChatServer  # noqa: E402
from peak_rss import peak_rss_mb  # noqa: E402
from planted_judges import (  # noqa: E402
    PlantedJudge,
    misses_changed_digits_in_lists,
    misses_edits_in_the_last_third,
    misses_long_additions,
    misses_nothing,
    misses_small_changes_in_the_first_sentence,
    misses_unit_swaps,
)

from fbi.hunt import Hunt, HuntConfig  # noqa: E402
from fbi.llm import ModelClient  # noqa: E402
from fbi.settings import ModelSettings  # noqa: E402
from fbi.sources import load_gold_items  # noqa: E402

FBI_ORIGINAL = Path(os.environ.get("FBI_ORIGINAL") or ROOT.parent / "shared" / "data"
                    / "fbi-original")
JUDGES = {"digits in list items": misses_changed_digits_in_lists,
          "the last third": misses_edits_in_the_last_third,
          "long additions": misses_long_additions,
          "unit swaps": misses_unit_swaps,
          "small changes in the first sentence": misses_small_changes_in_the_first_sentence,
          "none (clean)": misses_nothing}


def hunt(items, blind_spot, budget: int, search: str, folder: Path) -> dict:
    judge = PlantedJudge(items, blind_spot, noise=10)
    started = time.perf_counter()
    with ChatServer(judge) as server:
        settings = ModelSettings(model="openai/planted", api_base=server.url,
                                 concurrency=16)
        stage = Hunt(items, HuntConfig(model=settings, budget=budget, search=search),
                     folder, str(FBI_ORIGINAL))
        stage.run(ModelClient(api_key="sk-bench"))
        requests = sum(server.counts.values())
    result = stage.result
    confirmed = [f for f in result.findings if f.confirmed]
    # true: most of its missed examples are edits the blind spot names (the judge also
    # misses one edit in ten at random, and those may be among the examples)
    true = [f for f in confirmed if 2 * sum(blind_spot(e.gold_answer, e.edited_answer)
                                            for e in f.examples) > len(f.examples)]
    return {"calls": result.calls, "requests": requests,
            "seconds": round(time.perf_counter() - started, 1),
            "planted_confirmed": bool(true) if blind_spot is not misses_nothing else None,
            "false_confirmations": len(confirmed) - len(true),
            "confirmed": [f"{f.description} ({100 * (f.miss_rate or 0):.0f}% of {f.n}, "
                          f"baseline {100 * (f.baseline_rate or 0):.0f}%)" for f in true],
            "false": [f.description for f in confirmed if f not in true]}


def scale(budgets: list[int]) -> None:
    """``fbi hunt`` as a user runs it, a child process per budget reporting its own peak
    RSS, against the loopback server's hashed-verdict judge (answering at once)."""
    from openai_server import SCRIPTS
    from run_scale import measured_fbi

    work = Path(tempfile.mkdtemp(prefix="hunt-scale-"))
    try:
        with ChatServer(SCRIPTS["judge"]) as server:
            for budget in budgets:
                env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "COLUMNS": "100",
                       "FBI_CACHE": str(work / f"{budget}.sqlite")}
                run = measured_fbi("hunt", "--judge", "openai/bench", "--api-base",
                                   server.url, "--dataset", str(FBI_ORIGINAL), "--budget",
                                   str(budget), "--concurrency", "32", "--no-probe",
                                   "--output", str(work / str(budget)), env=env)
                result = json.loads((work / str(budget) / "hunt.json").read_text())
                print(json.dumps({"budget": budget, "calls": result["calls"],
                                  "seconds": run["seconds"],
                                  "peak_rss_mb": run["peak_rss_mb"]}), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budgets", default="250,500,1000,2000,3000")
    parser.add_argument("--scale", action="store_true",
                        help="only time and peak RSS of whole `fbi hunt` processes at "
                             "--budgets (e.g. 3000,30000)")
    arguments = parser.parse_args()
    budgets = [int(b) for b in arguments.budgets.split(",")]
    if not FBI_ORIGINAL.exists():
        raise SystemExit(f"the FBI release is not at {FBI_ORIGINAL}; set FBI_ORIGINAL")
    if arguments.scale:
        scale(budgets)
        return
    items, _ = load_gold_items(str(FBI_ORIGINAL))
    work = Path(tempfile.mkdtemp(prefix="hunt-bench-"))
    os.environ["FBI_CACHE"] = str(work / "cache.sqlite")
    solved: dict[str, int | None] = {}
    # per search and planted judge: the smallest budget that confirmed it with nothing
    # false, and every budget after it too
    first: dict[str, dict[str, int | None]] = {}
    try:
        for search in ("adaptive", "grid"):
            solved[search] = None
            first[search] = {name: None for name in JUDGES if JUDGES[name] is not
                             misses_nothing}
            for budget in budgets:
                rows = {}
                for name, blind_spot in JUDGES.items():
                    folder = work / f"{search}-{budget}-{len(rows)}"
                    rows[name] = hunt(items, blind_spot, budget, search, folder)
                    print(json.dumps({"search": search, "budget": budget, "judge": name,
                                      **rows[name]}), flush=True)
                for name, row in rows.items():
                    if name in first[search]:
                        found = row["planted_confirmed"] and not row["false_confirmations"]
                        if found and first[search][name] is None:
                            first[search][name] = budget
                        elif not found:
                            first[search][name] = None
                if solved[search] is None and all(
                        r["planted_confirmed"] in (True, None) and not
                        r["false_confirmations"] for r in rows.values()):
                    solved[search] = budget
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"smallest budget with every planted blind spot confirmed and none "
                      "false": solved, "smallest budget per planted blind spot": first,
                      "items": len(items), "peak_rss_mb": round(peak_rss_mb(), 1)}))


if __name__ == "__main__":
    main()
