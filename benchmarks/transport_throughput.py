"""fbi's run harness against the clients it could be replaced by, whole processes, in one
invocation (issue 39: a transport near the client's limit).

    python benchmarks/transport_throughput.py [--latency 0.2] [--calls 2300]
        [--concurrency 64 256] [--repeats 3]

Against one loopback OpenAI-protocol server answering after ``--latency`` seconds, each
side a new process (imports, start-up and all), timed from outside, sending the same
calls — the FBI release's (the sample's without it) under ``vanilla_star``, no cache:

* ``httpx``: a raw ``httpx.AsyncClient`` loop behind a semaphore, posting the very
  request bodies fbi's direct transport sends (planned by fbi, dumped to a file);
* ``aiohttp``: the same with a raw ``aiohttp.ClientSession`` (the library fbi's direct
  transport sends with: the stricter baseline);
* ``openai``: the same bodies through the ``openai`` SDK's ``AsyncOpenAI``;
* ``litellm``: the same calls through a bare ``litellm.acompletion`` loop;
* ``fbi direct``: ``fbi evaluate --api-base URL`` (fbi's own HTTP transport) as a user
  runs it: reading the dataset, the probe call, the run folder, the log, the progress
  bar, the closing table;
* ``fbi litellm``: the same command with the server given as ``OPENAI_BASE_URL``
  instead, so the calls go through litellm.

Targets: fbi direct ≥ 0.80 × httpx (and fbi's own: ≥ 0.80 × aiohttp), fbi litellm ≥
0.90 × litellm, at each concurrency (medians of alternated runs). Results go to stdout as
JSON; copy them to benchmarks/RESULTS.md with the machine and date.
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
FBI_ORIGINAL = Path(os.environ.get("FBI_ORIGINAL") or ROOT.parent / "shared" / "data"
                    / "fbi-original")
KEY = "sk-bench"
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": KEY,
       "COLUMNS": "120"}

HTTPX_LOOP = """
import asyncio, json, sys
import httpx
bodies = json.load(open(sys.argv[1])); url = sys.argv[2]; concurrency = int(sys.argv[3])
async def main():
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=None,
                                 max_keepalive_connections=None)) as client:
        async def one(body):
            async with gate:
                reply = await client.post(url + "/chat/completions", json=body,
                                          headers={"Authorization": "Bearer sk-bench"})
                reply.raise_for_status()
                reply.json()
        await asyncio.gather(*(one(b) for b in bodies))
asyncio.run(main())
"""

AIOHTTP_LOOP = """
import asyncio, json, sys
import aiohttp
bodies = json.load(open(sys.argv[1])); url = sys.argv[2]; concurrency = int(sys.argv[3])
async def main():
    gate = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def one(body):
            async with gate:
                async with session.post(url + "/chat/completions", json=body,
                                        headers={"Authorization": "Bearer sk-bench"}) as r:
                    r.raise_for_status()
                    await r.json()
        await asyncio.gather(*(one(b) for b in bodies))
asyncio.run(main())
"""

OPENAI_LOOP = """
import asyncio, json, sys
import httpx, openai
bodies = json.load(open(sys.argv[1])); url = sys.argv[2]; concurrency = int(sys.argv[3])
async def main():
    gate = asyncio.Semaphore(concurrency)
    client = openai.AsyncOpenAI(base_url=url, api_key="sk-bench", max_retries=0,
                                timeout=120, http_client=httpx.AsyncClient(
                                    limits=httpx.Limits(max_connections=None,
                                                        max_keepalive_connections=None)))
    async def one(body):
        async with gate:
            await client.chat.completions.create(**body)
    await asyncio.gather(*(one(b) for b in bodies))
asyncio.run(main())
"""

LITELLM_LOOP = """
import asyncio, json, sys
import litellm
litellm.suppress_debug_info = True
calls = json.load(open(sys.argv[1])); url = sys.argv[2]; concurrency = int(sys.argv[3])
async def main():
    gate = asyncio.Semaphore(concurrency)
    async def one(arguments):
        async with gate:
            await litellm.acompletion(**arguments, api_base=url, api_key="sk-bench")
    await asyncio.gather(*(one(c) for c in calls))
asyncio.run(main())
"""


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"),
                                "--latency", str(latency)], stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def planned(spec: str, limit: int, url: str) -> tuple[list[dict], list[dict]]:
    """What fbi sends for the run: the direct transport's bodies, and the arguments its
    litellm transport hands to ``litellm.acompletion`` (without server and key)."""
    from fbi.datasets import load_dataset
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.providers import HTTPTransport, ModelClient
    from fbi.settings import ModelSettings

    dataset = load_dataset(spec).select(limit=limit)
    config = EvaluationConfig(model=ModelSettings(model="openai/bench", api_base=url),
                              strategies=("vanilla_star",))
    client, http = ModelClient(), HTTPTransport()
    bodies, arguments = [], []
    for call in Evaluation(dataset, config, Path(tempfile.mkdtemp())).calls():
        sent = client._arguments(call.request)
        bodies.append(http._request(sent, url, KEY)[1])
        arguments.append({k: v for k, v in sent.items()
                          if k not in ("timeout", "num_retries", "max_retries")})
    return bodies, arguments


def timed(args: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(args, env=env or ENV, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--calls", type=int, default=2300)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each side, alternated; the medians are compared")
    args = parser.parse_args()
    spec = str(FBI_ORIGINAL) if FBI_ORIGINAL.is_dir() else "sample"
    work = Path(tempfile.mkdtemp(prefix="fbi-transport-bench-"))
    server, url = start_server(args.latency)
    # the release's categories hold 23 instances at --limit 1 (2 calls each)
    limit = max(1, round(args.calls / 46))
    results: dict = {"dataset": spec, "latency_s": args.latency, "runs": []}
    try:
        bodies, arguments = planned(spec, limit, url)
        (work / "bodies.json").write_text(json.dumps(bodies))
        (work / "arguments.json").write_text(json.dumps(arguments))
        for concurrency in args.concurrency:
            fbi = [sys.executable, "-m", "fbi", "evaluate", "--judge", "openai/bench",
                   "--dataset", spec, "--limit", str(limit), "--strategy", "vanilla_star",
                   "--concurrency", str(concurrency), "--no-cache"]
            sides = {
                "httpx": lambda c=concurrency: timed([sys.executable, "-c", HTTPX_LOOP, str(
                    work / "bodies.json"), url, str(c)]),
                "aiohttp": lambda c=concurrency: timed([sys.executable, "-c", AIOHTTP_LOOP,
                                                        str(work / "bodies.json"), url,
                                                        str(c)]),
                "openai": lambda c=concurrency: timed([sys.executable, "-c", OPENAI_LOOP, str(
                    work / "bodies.json"), url, str(c)]),
                "litellm": lambda c=concurrency: timed([sys.executable, "-c", LITELLM_LOOP,
                                                        str(work / "arguments.json"), url,
                                                        str(c)]),
                "fbi direct": lambda r, fbi=fbi, c=concurrency: timed(
                    [*fbi, "--api-base", url, "--output", str(work / f"direct-{c}-{r}")]),
                "fbi litellm": lambda r, fbi=fbi, c=concurrency: timed(
                    [*fbi, "--output", str(work / f"litellm-{c}-{r}")],
                    {**ENV, "OPENAI_BASE_URL": url, "OPENAI_API_BASE": url}),
            }
            times: dict[str, list[float]] = {name: [] for name in sides}
            for repeat in range(args.repeats):
                for name, side in sides.items():
                    times[name].append(side(repeat) if name.startswith("fbi") else side())
            calls = len(bodies)
            rate = {name: calls / statistics.median(values) for name, values in times.items()}
            run = {"concurrency": concurrency, "calls": calls,
                   "limit_calls_per_s": round(concurrency / args.latency, 1),
                   **{f"{name} calls/s": round(value, 1) for name, value in rate.items()},
                   "fbi direct / httpx": round(rate["fbi direct"] / rate["httpx"], 3),
                   "fbi direct / aiohttp": round(rate["fbi direct"] / rate["aiohttp"], 3),
                   "fbi litellm / litellm": round(rate["fbi litellm"] / rate["litellm"], 3),
                   "seconds": {name: [round(t, 2) for t in values]
                               for name, values in times.items()}}
            results["runs"].append(run)
            print(json.dumps(run), file=sys.stderr, flush=True)
    finally:
        server.terminate()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
