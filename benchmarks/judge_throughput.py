"""Judge-runner benchmark: throughput against a loopback server, cached re-runs, local judge.

    python benchmarks/judge_throughput.py [--calls 1500] [--latency 0.2] [--concurrency 64]

1. fbi's runner against the OpenAI-protocol test server (fixed reply latency), and a bare
   litellm loop with the same calls and concurrency in the same run, so fbi's own
   overhead is measured rather than guessed. The limit is concurrency ÷ latency.
2. A fully cached re-run of the FBI release (2,400 instances × all 11 strategies): once
   into a new folder (every call a cache hit), once into the same folder (all skipped).
   The first pass fills the cache from the loopback server with no added latency.
3. The embedded SmolLM2 judge's calls per minute (no cache).

Results go to stdout as JSON; copy them to benchmarks/RESULTS.md with machine and date.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fbi.settings import ModelSettings

ROOT = Path(__file__).resolve().parents[1]
FBI_ORIGINAL = ROOT.parent / "shared" / "data" / "fbi-original"
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark")


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"),
                                "--latency", str(latency)], stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def plan(dataset_spec: str, strategies: tuple[str, ...], url: str, out: Path, limit=None,
         concurrency: int = 64, judge: str = "openai/bench"):
    from fbi.datasets import load_dataset
    from fbi.judge import Evaluation, EvaluationConfig

    dataset = load_dataset(dataset_spec).select(limit=limit)
    config = EvaluationConfig(model=ModelSettings(model=judge, api_base=url,
                                                  concurrency=concurrency),
                              strategies=strategies)
    return Evaluation(dataset, config, out)


def fbi_run(evaluation, cache_path: Path | None) -> tuple[float, int]:
    from fbi.cache import ResponseCache
    from fbi.providers import ModelClient

    client = ModelClient(cache=ResponseCache(cache_path) if cache_path else None)
    started = time.perf_counter()
    totals = evaluation.run(client)
    return time.perf_counter() - started, totals.completed


def bare_litellm(evaluation, concurrency: int) -> tuple[float, int]:
    """The same calls through litellm.acompletion with a semaphore: the baseline."""
    from fbi.providers import import_litellm

    litellm = import_litellm()
    requests = [call.request for call in evaluation.calls()]

    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(request) -> None:
            async with gate:
                await litellm.acompletion(
                    model=request.model, messages=request.message_dicts(),
                    api_base=request.api_base, temperature=0, max_tokens=request.max_tokens)

        await asyncio.gather(*(one(r) for r in requests))

    started = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - started, len(requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--limit", type=int, default=35, help="instances per category")
    parser.add_argument("--skip-cached", action="store_true")
    parser.add_argument("--local-calls", type=int, default=10)
    args = parser.parse_args()
    spec = str(FBI_ORIGINAL) if FBI_ORIGINAL.is_dir() else "sample"
    results: dict = {"dataset": spec}
    work = Path(tempfile.mkdtemp(prefix="fbi-bench-"))

    # 1. throughput against the loopback server
    server, url = start_server(args.latency)
    try:
        bare = plan(spec, ("vanilla_star",), url, work / "bare", args.limit, args.concurrency)
        seconds, calls = bare_litellm(bare, args.concurrency)
        results["bare_litellm_calls_per_s"] = round(calls / seconds, 1)
        ours = plan(spec, ("vanilla_star",), url, work / "ours", args.limit, args.concurrency)
        seconds, calls = fbi_run(ours, None)
        results["fbi_calls_per_s"] = round(calls / seconds, 1)
        results["calls"] = calls
        results["limit_calls_per_s"] = round(args.concurrency / args.latency, 1)
        results["fbi_share_of_limit"] = round(results["fbi_calls_per_s"] /
                                              results["limit_calls_per_s"], 3)
        results["fbi_overhead_vs_bare"] = round(
            1 - results["fbi_calls_per_s"] / results["bare_litellm_calls_per_s"], 3)
    finally:
        server.terminate()

    # 2. fully cached re-runs of every instance × every strategy
    if not args.skip_cached:
        server, url = start_server(0.0)
        try:
            cache = work / "cache.sqlite"
            full = plan(spec, ("all",), url, work / "fill", None, args.concurrency)
            results["cached_calls"] = full.call_count
            seconds, _ = fbi_run(full, cache)
            results["fill_seconds"] = round(seconds, 1)
            again = plan(spec, ("all",), url, work / "cached", None, args.concurrency)
            seconds, _ = fbi_run(again, cache)
            results["cached_rerun_new_folder_seconds"] = round(seconds, 1)
            same = plan(spec, ("all",), url, work / "cached", None, args.concurrency)
            seconds, _ = fbi_run(same, cache)
            results["rerun_finished_folder_seconds"] = round(seconds, 2)
        finally:
            server.terminate()

    # 3. the embedded judge
    if args.local_calls:
        local = plan("sample", ("vanilla",), None, work / "local", 1, 1,
                     judge="local/smollm2-135m")
        local.dataset.instances = local.dataset.instances[:(args.local_calls + 1) // 2]
        seconds, calls = fbi_run(local, None)
        results["local_judge_calls_per_min"] = round(60 * calls / seconds, 1)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
