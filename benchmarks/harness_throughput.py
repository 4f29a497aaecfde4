"""The run harness against a bare async litellm loop, whole process included.

    python benchmarks/harness_throughput.py [--latency 0.2] [--concurrency 8 64 256]

For each concurrency, in one run and against the same loopback server (fixed reply
latency): the wall time of ``fbi evaluate`` as a user runs it (a new process: imports,
loading the dataset, planning, the run folder, the log, the progress bar), and of a new
process that sends the same requests (rendered prompts, token limit, response format)
through ``litellm.acompletion`` behind a semaphore and keeps nothing. The ratio is fbi's
throughput as a share of the bare loop's (target ≥ 0.90). The calls are the FBI
release's (or the sample's) with ``vanilla_star``, scaled with the concurrency so each
run lasts several seconds; no cache.

Results go to stdout as JSON; copy them to benchmarks/RESULTS.md with machine and date.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FBI_ORIGINAL = ROOT.parent / "shared" / "data" / "fbi-original"
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-bench",
       "COLUMNS": "120"}

BARE_LOOP = """
import asyncio, json, os, sys
import litellm
from fbi.settings import ModelSettings
litellm.suppress_debug_info = True
requests = json.load(open(sys.argv[1]))
concurrency = int(sys.argv[2])
async def main():
    gate = asyncio.Semaphore(concurrency)
    async def one(r):
        async with gate:
            await litellm.acompletion(model=r["model"], messages=r["messages"],
                                      api_base=r["api_base"], temperature=0,
                                      max_tokens=r["max_tokens"], num_retries=0,
                                      response_format=r["response_format"])
    await asyncio.gather(*(one(r) for r in requests))
asyncio.run(main())
"""


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"),
                                "--latency", str(latency)], stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def planned_requests(spec: str, limit: int, url: str) -> list[dict]:
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.settings import ModelSettings
    from fbi.sources import load_dataset

    dataset = load_dataset(spec).select(limit=limit)
    config = EvaluationConfig(model=ModelSettings(model="openai/bench", api_base=url),
                              strategies=("vanilla_star",))
    evaluation = Evaluation(dataset, config, Path(tempfile.mkdtemp()))
    return [{"model": c.request.model, "messages": c.request.message_dicts(),
             "api_base": url, "max_tokens": c.request.max_tokens,
             "response_format": {"type": "json_schema", "json_schema": {
                 "name": "verdict", "schema": c.request.response_schema, "strict": False}}}
            for c in evaluation.calls()]


def timed(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, env=ENV, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each, alternated; the medians are compared")
    args = parser.parse_args()
    spec = str(FBI_ORIGINAL) if FBI_ORIGINAL.is_dir() else "sample"
    work = Path(tempfile.mkdtemp(prefix="fbi-harness-bench-"))
    results: dict = {"dataset": spec, "latency_s": args.latency, "runs": []}
    server, url = start_server(args.latency)
    try:
        for concurrency in args.concurrency:
            # ~8 s of calls at the concurrency ÷ latency limit, at least 400 calls
            limit = max(9, min(100, int(concurrency / args.latency * 8 / 46)))
            requests = planned_requests(spec, limit, url)
            prompts = work / f"requests-{concurrency}.json"
            prompts.write_text(json.dumps(requests))
            bare_times, our_times = [], []
            for repeat in range(args.repeats):
                bare_times.append(timed([sys.executable, "-c", BARE_LOOP, str(prompts),
                                         str(concurrency)]))
                our_times.append(timed([
                    sys.executable, "-m", "fbi", "evaluate", "--judge", "openai/bench",
                    "--api-base", url, "--dataset", spec, "--limit", str(limit),
                    "--strategy", "vanilla_star", "--concurrency", str(concurrency),
                    "--no-cache", "--output", str(work / f"run-{concurrency}-{repeat}")]))
            bare, ours = statistics.median(bare_times), statistics.median(our_times)
            calls = len(requests)
            results["runs"].append({
                "concurrency": concurrency, "calls": calls,
                "bare_calls_per_s": round(calls / bare, 1),
                "fbi_calls_per_s": round(calls / ours, 1),
                "fbi_share_of_bare": round(bare / ours, 3),
                "bare_seconds": [round(t, 2) for t in bare_times],
                "fbi_seconds": [round(t, 2) for t in our_times],
                "limit_calls_per_s": round(concurrency / args.latency, 1)})
            print(json.dumps(results["runs"][-1]), file=sys.stderr, flush=True)
    finally:
        server.terminate()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
