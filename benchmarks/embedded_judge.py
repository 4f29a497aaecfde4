"""The embedded judge against raw llama-cpp-python, and the README's main job.

    python benchmarks/embedded_judge.py [--calls 24] [--main-job RUNS]

1. Calls per minute on the main job's first N prompts (the `quick` dataset, `vanilla`,
   JSON schema as grammar, greedy; raw llama-cpp-python gets a fresh context per call,
   as its chat completion does), three ways, one after another
   in this process: raw llama-cpp-python's `create_chat_completion`; fbi's provider
   alone (`fbi.local.generate`); fbi's whole runner (litellm, runner, parser, log).
2. What the hardware allows: raw llama.cpp prompt throughput, decoding speed at 1, 4 and
   8 sequences in one batch (does decoding several calls at once pay here?), and from
   them the least time the main job's prompts alone need (the tokens fed after the
   opening each prompt shares with the one before, which the engine keeps).
3. With --main-job RUNS: `fbi evaluate` as the README runs it, RUNS times, each with a
   fresh cache, timed from outside.

Results go to stdout as JSON; copy them to benchmarks/RESULTS.md with machine and date.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fbi.settings import ModelSettings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def main_job_calls(work: Path, concurrency: int = 8):
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.sources import QUICK, load_dataset

    settings = ModelSettings(model="local/smollm2-135m", concurrency=concurrency)
    return Evaluation(load_dataset(QUICK), EvaluationConfig(model=settings),
                      work / f"plan-{concurrency}")


def raw_llama_cpp(calls, threads: int) -> float:
    """Seconds for the calls through llama-cpp-python's own chat completion."""
    from llama_cpp import Llama

    from fbi.local import CONTEXT_TOKENS, gguf_path

    llama = Llama(model_path=gguf_path("smollm2-135m"), n_ctx=CONTEXT_TOKENS, verbose=False,
                  seed=0, n_threads=threads, n_threads_batch=threads)
    started = time.perf_counter()
    for call in calls:
        llama.reset()
        llama.create_chat_completion(
            messages=call.request.message_dicts(), temperature=0.0,
            max_tokens=call.request.max_tokens, seed=0,
            response_format={"type": "json_object", "schema": call.request.response_schema})
    return time.perf_counter() - started


def fbi_provider(calls) -> float:
    """Seconds for the calls through fbi's provider function (no litellm, no runner)."""
    from fbi.local import generate

    generate("smollm2-135m", [{"role": "user", "content": "Hi"}], {"max_tokens": 1})  # load
    started = time.perf_counter()
    for call in calls:
        generate("smollm2-135m", call.request.message_dicts(), {
            "max_tokens": call.request.max_tokens, "temperature": 0.0,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "verdict", "schema": call.request.response_schema}}})
    return time.perf_counter() - started


def fbi_runner(evaluation, n: int) -> tuple[float, float]:
    """Seconds for the first n calls through `Evaluation.run` (litellm, runner, log),
    litellm imported beforehand (a one-off ~3 s, not a per-call cost); and the seconds
    the calls themselves took, from the records' latencies."""
    from fbi.judge import read_judgments
    from fbi.llm import ModelClient
    from fbi.transports import import_litellm

    import_litellm()
    evaluation = first_calls(evaluation, n)
    started = time.perf_counter()
    evaluation.run(ModelClient(cache=None))
    wall = time.perf_counter() - started
    return wall, sum(j.latency_s for j in read_judgments(evaluation.output_dir))


def hardware(evaluation, threads: int) -> dict:
    """Raw llama.cpp prompt and decoding throughput, the latter at 1, 4 and 8 sequences
    decoded together in one batch (positions 250+, as after a judge prompt)."""
    import llama_cpp
    from llama_cpp import Llama

    from fbi.local import gguf_path

    llama = Llama(model_path=gguf_path("smollm2-135m"), n_ctx=512, verbose=False,
                  n_threads=threads)
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_seq_max, params.kv_unified = 8192, 2048, 8, True
    params.n_threads = params.n_threads_batch = threads
    ctx = llama_cpp.llama_init_from_model(llama._model.model, params)
    memory = llama_cpp.llama_get_memory(ctx)
    batch = llama_cpp.llama_batch_init(2048, 0, 1)

    def decode(sequences: int, tokens: int, start: int) -> float:
        batch.n_tokens = sequences * tokens
        for s in range(sequences):
            for j in range(tokens):
                i = s * tokens + j
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = 100 + (7 * j + s) % 999, \
                    start + j, 1
                batch.seq_id[i][0], batch.logits[i] = s, j == tokens - 1
        began = time.perf_counter()
        assert llama_cpp.llama_decode(ctx, batch) == 0
        return time.perf_counter() - began

    llama_cpp.llama_memory_clear(memory, True)
    prompt_rate = 1024 / decode(4, 256, 0)
    results = {"raw_prompt_tokens_per_s": round(prompt_rate)}
    for sequences in (1, 4, 8):
        llama_cpp.llama_memory_clear(memory, True)
        decode(sequences, 250, 0)
        step = sum(decode(sequences, 1, 250 + k) for k in range(20)) / 20
        results[f"raw_decode_tokens_per_s_{sequences}_sequences"] = round(sequences / step)
    # The tokens the engine must feed: each prompt less the opening it shares with the
    # call before (kept in the context), calls in the plan's order.
    from fbi.local import load_engine

    engine, before, fed, total = load_engine("smollm2-135m"), [], 0, 0
    for call in evaluation.calls():
        prompt = engine.prompt_tokens(call.request.message_dicts())
        shared = next((i for i, (a, b) in enumerate(zip(prompt, before, strict=False))
                       if a != b),
                      min(len(prompt) - 1, len(before)))
        total, fed, before = total + len(prompt), fed + len(prompt) - shared, prompt
    results["main_job_calls"] = evaluation.call_count
    results["main_job_prompt_tokens"] = total
    results["main_job_prompt_tokens_fed"] = fed
    results["main_job_least_seconds_for_prompts_alone"] = round(fed / prompt_rate)
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
    return results


def main_job(work: Path, runs: int) -> dict:
    """`fbi evaluate` as the README runs it, each time with a fresh cache and folder."""
    walls, codes = [], []
    for run in range(runs):
        env = {**os.environ, "FBI_CACHE": str(work / f"fresh-cache-{run}.sqlite")}
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "fbi", "evaluate", "--output",
                               str(work / f"main-job-{run}")], env=env, capture_output=True,
                              text=True, cwd=work)
        walls.append(round(time.perf_counter() - started, 1))
        codes.append(done.returncode)
    return {"main_job_exit_codes": codes, "main_job_wall_seconds": walls}


def first_calls(evaluation, n: int):
    """The same evaluation over its first instances: its first ``n`` calls (``vanilla``
    makes two of each instance, in the plan's order)."""
    import dataclasses

    from fbi.judge import Evaluation

    dataset = dataclasses.replace(evaluation.dataset,
                                  instances=evaluation.dataset.instances[:(n + 1) // 2])
    return Evaluation(dataset, evaluation.config, evaluation.output_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=24)
    parser.add_argument("--main-job", type=int, default=0, metavar="RUNS",
                        help="also time the README's main job RUNS times")
    args = parser.parse_args()
    threads = len(os.sched_getaffinity(0))
    work = Path(tempfile.mkdtemp(prefix="fbi-embedded-"))
    evaluation = main_job_calls(work)
    calls = list(first_calls(evaluation, args.calls).calls())
    results: dict = {"cores": threads, "calls": len(calls)}
    raw = raw_llama_cpp(calls, threads)
    provider = fbi_provider(calls)
    # one call at a time, so the records' latencies do not overlap (the engine decodes
    # one call at a time anyway: measured the same speed at concurrency 1 and 8)
    runner, in_calls = fbi_runner(main_job_calls(work, concurrency=1), len(calls))
    for name, seconds in (("raw_llama_cpp", raw), ("fbi_provider", provider),
                          ("fbi_runner", runner)):
        results[f"{name}_calls_per_min"] = round(60 * len(calls) / seconds, 1)
    results["fbi_runner_overhead_vs_raw"] = round(runner / raw - 1, 3)
    # what the runner adds around the model calls (calls are made one at a time)
    results["fbi_runner_time_outside_model_calls"] = round(1 - in_calls / runner, 3)
    results.update(hardware(evaluation, threads))
    if args.main_job:
        results.update(main_job(work, args.main_job))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
