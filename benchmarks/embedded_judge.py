"""The embedded judge against raw llama-cpp-python, and the README's main job.

    python benchmarks/embedded_judge.py [--calls 24] [--main-job RUNS]

1. Calls per minute on the main job's first N prompts (the `quick` dataset, `vanilla`,
   JSON schema as grammar, greedy; raw llama-cpp-python gets a fresh context per call,
   as its chat completion does), three ways, one after another
   in this process: raw llama-cpp-python's `create_chat_completion`; fbi's provider
   alone (`fbi.providers.local.generate`); fbi's whole runner (litellm, runner, parser, log).
2. What the hardware allows: raw llama.cpp prompt throughput, decoding speed at 1, 4 and
   8 sequences in one batch (does decoding several calls at once pay here?), and from
   them the least time the main job's prompts alone need (the tokens fed after the
   opening each prompt shares with the one before, which the engine keeps).
3. With --main-job RUNS: `fbi evaluate` as the README runs it, RUNS times, each with a
   fresh cache, timed from outside, with the NumPy runtime (the default) and then with
   llama.cpp's (the baseline, FBI_LOCAL_RUNTIME=llama.cpp), and the peak RSS of each.
4. With --profile: where the NumPy runtime's time goes on the main job's calls, 8 at a
   time — matrix products, attention, the rest — and at 16 and 46 in flight.
5. With --runtimes: the main job's 46 calls through each runtime's engine, 8 at a time
   (as the runner sends them), in this process: wall time, and how many replies and
   verdicts the two runtimes agree on (issue 51: "the same replies within the
   determinism the runtime allows").

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

from peak_rss import IMPORTABLE_IN_CHILD

from fbi.settings import ModelSettings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def main_job_calls(work: Path, concurrency: int = 8):
    from fbi.datasets import QUICK, load_dataset
    from fbi.judge import Evaluation, EvaluationConfig

    settings = ModelSettings(model="local/smollm2-135m", concurrency=concurrency)
    return Evaluation(load_dataset(QUICK), EvaluationConfig(model=settings),
                      work / f"plan-{concurrency}")


def raw_llama_cpp(calls, threads: int) -> float:
    """Seconds for the calls through llama-cpp-python's own chat completion."""
    from llama_cpp import Llama

    from fbi.providers.local import CONTEXT_TOKENS, gguf_path

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
    from fbi.providers.local import generate

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
    from fbi.providers import ModelClient, import_litellm

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

    from fbi.providers.local import gguf_path

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
    from fbi.providers.local import load_engine

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
    """`fbi evaluate` as the README runs it, each time with a fresh cache and folder,
    with each runtime; wall seconds and peak RSS (MB) of every run."""
    results: dict = {}
    for runtime in ("numpy", "llama.cpp"):
        walls, codes, peaks = [], [], []
        for run in range(runs):
            env = {**os.environ, "FBI_LOCAL_RUNTIME": runtime,
                   "FBI_CACHE": str(work / f"fresh-cache-{runtime}-{run}.sqlite")}
            peak_file = work / f"peak-{runtime}-{run}"
            # the child's own VmHWM (ru_maxrss would fold in this process's peak)
            child = IMPORTABLE_IN_CHILD + (
                "import atexit, sys\nfrom peak_rss import peak_rss_mb\n"
                f"atexit.register(lambda: open({str(peak_file)!r}, 'w')"
                ".write(str(peak_rss_mb())))\n"
                f"sys.argv = ['fbi', 'evaluate', '--output', "
                f"{str(work / f'main-job-{runtime}-{run}')!r}]\n"
                "from fbi.cli import run\nrun()\n")
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", child], env=env, cwd=work,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            walls.append(round(time.perf_counter() - started, 1))
            codes.append(done.returncode)
            peaks.append(round(float(peak_file.read_text())) if peak_file.exists() else None)
        results[f"main_job_{runtime}"] = {"exit_codes": codes, "wall_seconds": walls,
                                          "peak_rss_mb": peaks}
    return results


def profile(calls) -> dict:
    """Seconds in the NumPy runtime's matrix products and attention, timed around them,
    for the calls 8, 16 and 46 at a time (a fresh engine each time)."""
    from collections import Counter
    from concurrent.futures import ThreadPoolExecutor

    import fbi.providers.local._numpy_model as model
    from fbi.providers.local import CONTEXT_TOKENS, gguf_path
    from fbi.providers.local._numpy_engine import NumpyEngine

    spent: Counter = Counter()

    def timed(name, function):
        def wrapper(*args):
            began = time.perf_counter()
            try:
                return function(*args)
            finally:
                spent[name] += time.perf_counter() - began
        return wrapper

    model._matmul = timed("matmul", model._matmul)
    model.NumpyLlama._attend = timed("attention", model.NumpyLlama._attend)
    forward = model.NumpyLlama.forward
    model.NumpyLlama.forward = lambda self, steps: (
        spent.update(passes=1, rows=sum(len(s.tokens) for s in steps)),
        timed("forward", forward)(self, steps))[1]
    results = {}
    for at_once in (8, 16, 46):
        spent.clear()
        began = time.perf_counter()
        engine = NumpyEngine(gguf_path("smollm2-135m"), CONTEXT_TOKENS, 2)
        loaded = time.perf_counter()
        with ThreadPoolExecutor(at_once) as pool:
            list(pool.map(lambda call, engine=engine: engine.generate(
                call.request.message_dicts(), max_tokens=call.request.max_tokens,
                schema=call.request.response_schema), calls))
        wall = time.perf_counter() - loaded
        results[f"{at_once}_at_once"] = {
            "load_s": round(loaded - began, 1), "calls_s": round(wall, 1),
            "forward_passes": spent["passes"], "rows": spent["rows"],
            "matmul_s": round(spent["matmul"], 1),
            "attention_s": round(spent["attention"], 1),
            "outside_forward_s": round(wall - spent["forward"], 1)}
    return results


def runtimes(calls) -> dict:
    """The calls through each runtime's engine, 8 at a time; wall seconds, and the
    replies and verdicts both runtimes give alike."""
    from concurrent.futures import ThreadPoolExecutor

    from fbi.providers.local import load_engine

    replies: dict[str, list[str]] = {}
    results: dict = {}
    for runtime in ("numpy", "llama.cpp"):
        os.environ["FBI_LOCAL_RUNTIME"] = runtime
        engine = load_engine("smollm2-135m")

        def ask(call, engine=engine):
            return engine.generate(call.request.message_dicts(),
                                   max_tokens=call.request.max_tokens,
                                   schema=call.request.response_schema).text

        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            replies[runtime] = list(pool.map(ask, calls))
        results[f"{runtime}_engine_seconds"] = round(time.perf_counter() - started, 1)
    os.environ.pop("FBI_LOCAL_RUNTIME")

    def verdict(text: str):
        try:
            reply = json.loads(text)
        except ValueError:
            return None
        return reply.get("score", reply.get("verdict"))

    pairs = list(zip(replies["numpy"], replies["llama.cpp"], strict=True))
    results["replies_identical"] = f"{sum(a == b for a, b in pairs)} of {len(pairs)}"
    results["verdicts_identical"] = \
        f"{sum(verdict(a) == verdict(b) for a, b in pairs)} of {len(pairs)}"
    return results


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
    parser.add_argument("--profile", action="store_true",
                        help="only profile the NumPy runtime on the main job's calls")
    parser.add_argument("--runtimes", action="store_true",
                        help="only compare the two runtimes on the main job's calls")
    args = parser.parse_args()
    threads = len(os.sched_getaffinity(0))
    work = Path(tempfile.mkdtemp(prefix="fbi-embedded-"))
    evaluation = main_job_calls(work)
    if args.profile:
        print(json.dumps(profile(list(evaluation.calls())), indent=2))
        return
    if args.runtimes:
        results = runtimes(list(evaluation.calls()))
        if args.main_job:
            results.update(main_job(work, args.main_job))
        print(json.dumps(results, indent=2))
        return
    os.environ["FBI_LOCAL_RUNTIME"] = "llama.cpp"  # what the rest compares with
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
