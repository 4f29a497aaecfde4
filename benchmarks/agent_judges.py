"""Judges of agents against trajectories with planted errors (issue 54): do the rates
match what loopback judges of known behaviour were built to do, and what does a
whole-sample run cost?

    python benchmarks/agent_judges.py

The candidates: every rule of `fbi.perturb` on the built-in 32 gold trajectories (seed
0), judged under `agent`, `agent_pairwise` (both orders) and `agent_reference` through
fbi's own harness against a loopback OpenAI-protocol server (tests/openai_server.py)
whose judge is one of:

* **blind to ignored errors** — penalises every edit but `trajectory/ignored-error`,
  which it always misses (so it keeps no score-invariant rewrite either);
* **final answer only** — compares only the trajectories' last messages: misses an
  edit exactly when the final answer is the gold's.

Both also miss one edit in ten at random (by the edit's hash). The expected miss rate of
each category is computed from the candidates alone (what each judge was built to
miss), never from fbi's outcomes, and set beside the measured.
Then cost: the whole sample's run (three strategies), the same grown 10× (the
candidates of seeds 0–9), and a baseline in the same invocation doing the same number
of calls on the same instances with the answer strategies (vanilla, pairwise,
reference): time and peak RSS.

Last, `fbi hunt --trajectories` against loopback judges of agents whose blind spots are
chosen by where the changed step lies (tests/planted_judges.trajectory_spots, which
reads the renderings by its own code), the first missed 95% of the time and the others
70%: three at once (steps with side effects, tool errors, final answers), four at once
(those and a call repeated with the same arguments), one tool's steps, and none (random
misses only), each over ten seeds: how often every planted spot is named once, by a
finding ≥ 80% of whose examples it explains, with no other finding. JSON to stdout; copy
to RESULTS.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark")

AGENT = ("agent", "agent_pairwise", "agent_reference")
#: Both judges also miss one edit in NOISE at random (by the edit's hash), so the rates
#: are not all 0 and 1.
NOISE = 10
ANSWERS = ("vanilla", "pairwise", "reference")


def candidates(seeds: range):
    from fbi.perturb import trajectory_candidates, trajectory_categories
    from fbi.trajectories import sample_trajectories

    made = []
    for seed in seeds:
        found, _ = trajectory_candidates(sample_trajectories(), trajectory_categories(), seed)
        made += [i.model_copy(update={"id": f"{i.id}#s{seed}"}) for i in found]
    return made


def final_line(rendered: str) -> str:
    """A rendered trajectory's last step's text (its final answer, where it has one)."""
    return rendered.rsplit("Step ", 1)[-1].split("\n", 1)[-1].strip()


def judges(instances):
    from planted_judges import PlantedJudge

    category = {i.perturbed_answer: i.category for i in instances}
    final = {i.perturbed_answer: final_line(i.gold_answer) == final_line(i.perturbed_answer)
             for i in instances}
    golds = [_Gold(q, g) for q, g in {(i.question, i.gold_answer) for i in instances}]
    return {
        "blind to ignored errors": PlantedJudge(
            golds, lambda gold, edited: category.get(edited) == "trajectory/ignored-error",
            noise=NOISE),
        "final answer only": PlantedJudge(golds, lambda gold, edited: final.get(edited, False),
                                          noise=NOISE),
    }


def noisy(edited: str) -> bool:
    """Whether the judges miss this edit at random too (one in NOISE, by its hash)."""
    return int(hashlib.sha256(edited.encode()).hexdigest(), 16) % NOISE == 0


class _Gold:
    """What PlantedJudge reads of an item: its question and gold answer."""

    def __init__(self, question: str, gold: str):
        self.instruction, self.gold_answer = question, gold


def expected(instances, judge: str) -> dict[str, float]:
    """Each category's miss rate as the judge was built (score-invariant: retained)."""
    by: dict[str, list[bool]] = defaultdict(list)
    for i in instances:
        if judge == "blind to ignored errors":  # it penalises every other edit: SI too
            missed = i.category == "trajectory/ignored-error"
        else:
            missed = final_line(i.gold_answer) == final_line(i.perturbed_answer)
        missed = missed or noisy(i.perturbed_answer)
        by[i.category].append(missed)
    return {c: sum(v) / len(v) for c, v in by.items()}


def run(instances, strategies, script, out: Path) -> tuple[float, dict]:
    from openai_server import ChatServer

    from fbi.datasets import load_dataset, write_dataset
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.metrics import instance_outcomes
    from fbi.providers import ModelClient
    from fbi.runs import load_run
    from fbi.settings import ModelSettings

    with ChatServer(script) as server:
        config = EvaluationConfig(model=ModelSettings(model="openai/judge", api_base=server.url,
                                                      concurrency=32),
                                  strategies=strategies)
        data = write_dataset(instances, out.with_suffix(".jsonl"))
        evaluation = Evaluation(load_dataset(str(data)), config, out)
        started = time.perf_counter()
        totals = evaluation.run(ModelClient())
        seconds = time.perf_counter() - started
    assert not totals.failed, totals
    outcomes = instance_outcomes(load_run(out).judgments)
    rates: dict[str, dict[str, float]] = defaultdict(dict)
    for strategy in strategies:
        groups: dict[str, list] = defaultdict(list)
        for o in outcomes:
            if o.strategy == strategy:
                groups[o.category].append(o)
        for group, members in groups.items():
            readable = [o for o in members if o.outcome != "unparseable"]
            rates[strategy][group] = sum(o.outcome in ("undetected", "retained")
                                         for o in readable) / len(readable)
    return seconds, {"calls": totals.total, "rates": rates}


#: The step-level judge names the changed step exactly, one step early for these, and
#: nothing (a miss) for those; each step it names is where the texts first differ.
EARLY, NONE = "trajectory/ignored-error", "trajectory/misreported-result"


def placements(instances, out: Path) -> dict:
    """agent_step against `step_judge`: fbi's placement table beside the built one."""
    from openai_server import ChatServer
    from planted_judges import step_judge

    from fbi.datasets import load_dataset, write_dataset
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.metrics import instance_outcomes, step_localisation
    from fbi.providers import ModelClient
    from fbi.runs import load_run
    from fbi.settings import ModelSettings

    with ChatServer(step_judge(instances, {EARLY: -1, NONE: None})) as server:
        config = EvaluationConfig(model=ModelSettings(model="openai/step", api_base=server.url,
                                                      concurrency=32),
                                  strategies=("agent_step",))
        data = write_dataset(instances, out.with_suffix(".jsonl"))
        Evaluation(load_dataset(str(data)), config, out).run(ModelClient())
    run = load_run(out)
    rows = step_localisation(instance_outcomes(run.judgments), run.instances)
    built = {c: "missed" if c == NONE else "early" if c == EARLY else "exact"
             for c in {i.category for i in instances} if c != "score-invariant"}
    return {r.category: {"built": built[r.category], "judged": r.judged, "exact": r.exact,
                         "early": r.early, "late": r.late, "missed": r.missed,
                         "as built": getattr(r, built[r.category]) == r.judged}
            for r in rows}


#: Hunts per judge of agents, and each hunt's budget.
HUNT_SEEDS, HUNT_BUDGET = 10, 1200


def hunts() -> dict:
    """`fbi hunt --trajectories sample` against judges of agents with planted spots."""
    from openai_server import ChatServer
    from planted_judges import PlantedJudge, SeveralSpots, trajectory_spots

    from fbi.hunt import Hunt, HuntConfig
    from fbi.providers import ModelClient
    from fbi.records import GoldItem
    from fbi.settings import ModelSettings
    from fbi.trajectories import sample_trajectories

    items = [GoldItem.of_trajectory(t) for t in sample_trajectories()]
    spots = trajectory_spots(items)
    planted = {"three spots": ("final answer", "side effects", "tool errors"),
               "four spots": ("final answer", "side effects", "tool errors",
                              "repeated calls"),
               "one tool": ("tool:search_flights",), "clean": ()}
    results = {}
    for name, chosen in planted.items():
        # the first spot loud (missed 95% of the time), the others quiet (70%)
        judge = PlantedJudge(items, SeveralSpots({s: (spots[s], 0.95 if k == 0 else 0.7)
                                                  for k, s in enumerate(chosen)}),
                             noise=NOISE)
        found, extra, calls, seconds = 0, 0, [], 0.0
        for seed in range(HUNT_SEEDS):
            work = Path(tempfile.mkdtemp(prefix="agent-hunt-"))
            with ChatServer(judge) as server:
                settings = ModelSettings(model="openai/planted", api_base=server.url,
                                         concurrency=16)
                stage = Hunt(items, HuntConfig(model=settings, budget=HUNT_BUDGET,
                                               seed=seed, strategies=("agent",
                                                                      "agent_pairwise")),
                             work / "hunt", "trajectories:sample")
                started = time.perf_counter()
                stage.run(ModelClient(api_key="sk-bench"))
                seconds += time.perf_counter() - started
            result = stage.result
            named = {s: [f for f in result.confirmed if f.examples and sum(
                spots[s](e.gold_answer, e.edited_answer) for e in f.examples) >= 0.8 * len(
                f.examples)] for s in chosen}
            found += all(len(f) == 1 for f in named.values())
            extra += len(result.confirmed) - sum(len(f) for f in named.values())
            calls.append(result.calls)
        results[name] = {"planted": list(chosen), "hunts": HUNT_SEEDS,
                         "every spot named once": found, "other confirmed findings": extra,
                         "mean calls": round(sum(calls) / len(calls)),
                         "mean seconds": round(seconds / HUNT_SEEDS, 2)}
    return results


def main() -> None:
    from peak_rss import peak_rss_mb

    work = Path(tempfile.mkdtemp(prefix="agent-bench-"))
    os.environ["FBI_CACHE"] = str(work / "cache.sqlite")
    once = candidates(range(1))
    results: dict = {"candidates": len(once), "judges": {}}
    for name, script in judges(once).items():
        seconds, measured = run(once, AGENT, script, work / name.replace(" ", "-"))
        want = expected(once, name)
        rows = {c: {"expected": round(want[c], 4), **{
            s: round(measured["rates"][s][c], 4) for s in AGENT}} for c in sorted(want)}
        agree = all(abs(row[s] - row["expected"]) < 1e-9 for row in rows.values()
                    for s in AGENT)
        results["judges"][name] = {"match": agree, "seconds": round(seconds, 2),
                                   "calls": measured["calls"], "categories": rows}
    results["step-level placement"] = placements(once, work / "step")
    grown = candidates(range(10))
    script = judges(grown)["final answer only"]
    for label, instances in (("sample", once), ("sample × 10", grown)):
        agent_s, agent = run(instances, AGENT, script, work / f"a-{len(instances)}")
        base_s, base = run(instances, ANSWERS, script, work / f"b-{len(instances)}")
        results[label] = {"instances": len(instances), "calls": agent["calls"],
                          "agent strategies (s)": round(agent_s, 2),
                          "baseline: answer strategies, same calls (s)": round(base_s, 2),
                          "baseline calls": base["calls"]}
    results["hunts of judges of agents"] = hunts()
    results["peak RSS (MB)"] = round(peak_rss_mb(), 1)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
