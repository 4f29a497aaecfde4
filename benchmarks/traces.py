"""Agents as the world records them (issue 66): one agent's runs written in every layout
fbi reads, then read, perturbed and judged; what each rule makes on each layout.

    python benchmarks/traces.py

**The runs.** A support agent's (here, not fbi's sample), written in six layouts by
``tests/layouts.py``: OpenAI's chat layout, Anthropic's content blocks, τ-bench's
results, OpenTelemetry GenAI spans (OTLP JSON, one export a line, a sub-agent doing the
reads in half the runs), OpenInference spans (Phoenix's span JSON) and AgentRewardBench's
web-agent trajectories (BrowserGym actions).

**Coverage.** Per layout and rule: candidates made and declined (every rule on every
run, seed 0).

**Cost.** Each in a child process (its own peak RSS): a trace of 250 reads (≈ 520 steps)
and a file of 1,000 traces of 10 reads, then the file grown 10×: read, perturbed (every
rule) and judged (`agent_step` against a loopback OpenAI-protocol judge that names the
changed step; three categories, to keep the calls few); a baseline in the same
invocation does the same on the same runs in OpenAI's chat layout. JSON to stdout; copy
to RESULTS.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark")

JUDGED = ("trajectory/wrong-tool", "trajectory/unconfirmed-action",
          "trajectory/ignored-error")
from layouts import LAYOUTS, write  # noqa: E402


def coverage(work: Path) -> dict:
    from fbi.perturb import trajectory_candidates, trajectory_categories
    from fbi.trajectories import read_trajectories

    table = {}
    for layout in LAYOUTS:
        found = read_trajectories(write(layout, 8, 6, work / f"cov-{len(table)}.jsonl"))
        made, declined = trajectory_candidates(found, trajectory_categories(), 0)
        counts = Counter(i.id.split(":", 1)[1] for i in made)
        table[layout] = {c: [counts.get(c, 0),
                             sum(line.split(" × ")[1].split(":")[0] == c
                                 for line in declined)]
                         for c in trajectory_categories()}
    return table


def case(layout: str, runs: int, reads: int) -> dict:
    """Read, perturb and judge, timed, in this process (a child of the benchmark)."""
    from openai_server import ChatServer
    from peak_rss import peak_rss_mb
    from planted_judges import step_judge

    from fbi.datasets import load_dataset, write_dataset
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.perturb import trajectory_candidates, trajectory_categories
    from fbi.providers import ModelClient
    from fbi.settings import ModelSettings
    from fbi.trajectories import read_trajectories

    work = Path(tempfile.mkdtemp())
    path = write(layout, runs, reads, work / "runs.jsonl")
    times = {}
    started = time.perf_counter()
    found = read_trajectories(path)
    times["read"] = time.perf_counter() - started
    started = time.perf_counter()
    made, _ = trajectory_candidates(found, trajectory_categories(), 0)
    times["perturb"] = time.perf_counter() - started
    judged = [i for i in made if i.category in JUDGED]
    data = write_dataset(judged, work / "queue.jsonl")
    with ChatServer(step_judge(judged, {})) as server:
        config = EvaluationConfig(model=ModelSettings(model="openai/step", api_base=server.url,
                                                      concurrency=32),
                                  strategies=("agent_step",))
        evaluation = Evaluation(load_dataset(str(data)), config, work / "run")
        started = time.perf_counter()
        totals = evaluation.run(ModelClient())
        times["judge"] = time.perf_counter() - started
    assert not totals.failed, totals
    return {"layout": layout, "runs": runs, "reads": reads, "file_mb": round(
        path.stat().st_size / 1e6, 1), "steps": sum(len(t.steps) for t in found),
        "candidates": len(made), "calls": totals.total,
        **{k: round(v, 2) for k, v in times.items()}, "peak_rss_mb": round(peak_rss_mb(), 1)}


def in_child(layout: str, runs: int, reads: int) -> dict:
    done = subprocess.run([sys.executable, __file__, "--case", layout, str(runs), str(reads)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    if sys.argv[1:2] == ["--case"]:
        print(json.dumps(case(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        return
    with tempfile.TemporaryDirectory() as work:
        table = coverage(Path(work))
    cost = []
    for runs, reads in ((1, 250), (1_000, 10), (10_000, 10)):
        for layout in ("OTLP GenAI spans", "OpenAI chat"):  # the baseline second
            cost.append(in_child(layout, runs, reads))
    print(json.dumps({"coverage": table, "cost": cost, "cpu": os.cpu_count(),
                      "load": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
