"""Issue 13: fail fast and clearly, any server, any parameter (against 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OUTSIDE_CHECKOUT
from openai_server import ChatServer

from fbi.providers import RequestRateLimiter
from fbi.settings import ModelSettings

KEY = "sk-fbi-access-test-7f3a9c"


def env_without_keys(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and k != "FBI_API_KEY"}
    return {**env, "FBI_CACHE": str(tmp_path / "cache.sqlite"), "COLUMNS": "200", **extra}


def fbi(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fbi", *args], capture_output=True,
                          text=True, timeout=300, cwd=OUTSIDE_CHECKOUT,
                          env=env_without_keys(tmp_path, **env))


def configuration_error(result, *words: str) -> None:
    """Fail fast means: one message, exit 2, nothing retried (the callers count the
    requests where a server can count them) — never a time bound, which a busy machine
    would break."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("error:") == 1
    for word in words:
        assert word in result.stderr, (word, result.stderr)


def test_a_refused_server_is_one_message_before_anything_is_written(tmp_path):
    out = tmp_path / "run"
    result = fbi(tmp_path, "evaluate", "--judge", "openai/x", "--api-base",
                          "http://127.0.0.1:9/v1", "--output", str(out))
    configuration_error(result, "unreachable", "check --api-base")
    assert not out.exists()


@pytest.mark.slow
def test_a_missing_key_is_named_statically_and_a_dry_run_notes_it(tmp_path):
    """A run without a key stops before anything is written; a dry run (issue 26) prices
    the calls and names the key the real run will need."""
    args = ("evaluate", "--judge", "gpt-4-turbo", "--output", str(tmp_path / "run"))
    result = fbi(tmp_path, *args)
    configuration_error(result, "OPENAI_API_KEY", "--api-key")
    dry = fbi(tmp_path, *args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    said = " ".join(dry.stdout.split())
    assert "to make" in said and "before the real run:" in said and "OPENAI_API_KEY" in said
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_an_unknown_model_is_named(tmp_path):
    result = fbi(tmp_path, "evaluate", "--judge", "gpt-5-nonexistent", "--output",
                          str(tmp_path / "run"))
    configuration_error(result, "unknown model 'gpt-5-nonexistent'", "PROVIDER/MODEL")


@pytest.mark.slow
def test_a_model_the_server_does_not_have_and_a_wrong_key_fail_at_the_probe(tmp_path):
    with ChatServer(api_key=KEY, models=("judge",)) as server:
        base = ("evaluate", "--api-base", server.url, "--output", str(tmp_path / "run"))
        result = fbi(tmp_path, *base, "--judge", "openai/other", "--api-key", KEY)
        configuration_error(result, "not_found", "does not exist")
        result = fbi(tmp_path, *base, "--judge", "openai/judge", "--api-key", "wrong")
        configuration_error(result, "auth", "--api-key")
        assert server.counts["ok"] == 2  # one probe each, no retries
    assert not (tmp_path / "run").exists()


def test_the_circuit_breaker_stops_a_run_whose_model_disappears(tmp_path):
    """With the probe skipped, calls that all fail for want of the model stop the run
    after five in a row — not after retrying every call."""
    with ChatServer(models=("judge",)) as server:
        out = tmp_path / "run"
        result = fbi(tmp_path, "evaluate", "--judge", "openai/gone", "--api-base",
                              server.url, "--output", str(out), "--no-probe",
                              "--concurrency", "2")
        requests = server.counts["ok"]
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "calls in a row failed (not_found)" in result.stderr
    assert requests <= 5 + 2  # no retries, no call after the breaker
    records = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "error" for r in records)
    assert json.loads((out / "run.json").read_text())["totals"]["stopped_by"]


def test_a_compatible_server_needs_no_key_and_takes_any_parameter(tmp_path):
    system = tmp_path / "system.txt"
    system.write_text("You are a strict grader.", encoding="utf-8")
    out = tmp_path / "run"
    with ChatServer() as server:
        result = fbi(tmp_path, "evaluate", "--judge", "openai/judge", "--api-base",
                        server.url, "--output", str(out), "--category", "entity",
                        "--limit", "1", "--seed", "7", "--model-arg", "top_p=0.5",
                        "--model-arg", 'extra_body={"min_p": 0.1}', "--system-prompt",
                        str(system))
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    judged = [r for r in requests if len(r["messages"]) == 2]
    assert len(judged) == 2  # gold and perturbed; the probe has no system message
    for request in judged:
        assert request["seed"] == 7 and request["top_p"] == 0.5 and request["min_p"] == 0.1
        assert request["messages"][0] == {"role": "system",
                                           "content": "You are a strict grader."}
    parameters = json.loads((out / "run.json").read_text())["parameters"]
    assert parameters["seed"] == 7
    assert parameters["model_args"] == {"extra_body": {"min_p": 0.1}, "top_p": 0.5}
    assert len(parameters["system_prompt_sha256"]) == 64


@pytest.mark.slow
def test_the_api_key_reaches_the_server_and_is_written_nowhere(tmp_path):
    out = tmp_path / "run"
    with ChatServer(api_key=KEY) as server:
        by_option = fbi(tmp_path, "evaluate", "--judge", "openai/judge", "--api-base",
                           server.url, "--output", str(out), "--category", "entity",
                           "--limit", "1", "--api-key", KEY, "--no-cache")
        by_env = fbi(tmp_path, "evaluate", "--judge", "openai/judge", "--api-base",
                        server.url, "--output", str(tmp_path / "run2"), "--category",
                        "entity", "--limit", "1", "--no-cache", FBI_API_KEY=KEY)
    assert by_option.returncode == 0, by_option.stderr
    assert by_env.returncode == 0, by_env.stderr
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert KEY.encode() not in written
    assert "[redacted]" in json.loads((out / "run.json").read_text())["command"]


@pytest.mark.slow
def test_a_changed_model_arg_is_a_different_run_and_cache_entry(tmp_path):
    with ChatServer() as server:
        args = ("evaluate", "--judge", "openai/judge", "--api-base", server.url, "--output",
                str(tmp_path / "run"), "--category", "entity", "--limit", "1")
        assert fbi(tmp_path, *args, "--model-arg", "top_p=0.5").returncode == 0
        refused = fbi(tmp_path, *args, "--model-arg", "top_p=0.9")
        assert refused.returncode == 2 and "model_args" in refused.stderr
        served = server.counts["ok"]
        elsewhere = (*args[:-5], str(tmp_path / "run2"), "--category", "entity", "--limit", "1")
        again = fbi(tmp_path, *elsewhere, "--model-arg", "top_p=0.5")
        assert again.returncode == 0 and server.counts["ok"] == served  # all from the cache
        other = fbi(tmp_path, *elsewhere[:-5], str(tmp_path / "run3"), *elsewhere[-4:],
                       "--model-arg", "top_p=0.9")
        assert other.returncode == 0 and server.counts["ok"] == served + 1 + 2  # probe, 2


def test_bad_model_args_are_refused_with_the_option_to_use(tmp_path):
    result = fbi(tmp_path, "evaluate", "--model-arg", "temperature=1", "--dry-run")
    assert result.returncode == 2 and "--temperature" in result.stderr
    result = fbi(tmp_path, "evaluate", "--model-arg", "top_p", "--dry-run")
    assert result.returncode == 2 and "KEY=VALUE" in result.stderr


def test_the_rate_limiter_spaces_request_starts():
    now = [0.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    limiter = RequestRateLimiter(rpm=30, clock=lambda: now[0], sleep=sleep)

    async def burst() -> None:
        await asyncio.gather(*(limiter.wait() for _ in range(4)))

    asyncio.run(burst())
    assert slept == [2.0, 4.0, 6.0]  # 30 a minute: one every 2 s, the first at once
    now[0] = 100.0  # after a quiet spell, no debt
    slept.clear()
    asyncio.run(limiter.wait())
    assert slept == []


def _cache_first_calls(tmp_path: Path, judge: str, strategies: tuple[str, ...], count: int,
                       api_base: str | None = None) -> int:
    """Put a reply for the first ``count`` calls of the sample under ``judge`` in the run's
    cache (a real SQLite file, as a finished run would leave it); returns the calls."""
    from fbi import load_dataset
    from fbi.cache import ResponseCache
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.providers import ModelResponse

    evaluation = Evaluation(load_dataset("sample"),
                            EvaluationConfig(model=ModelSettings(model=judge, api_base=api_base),
                                             strategies=strategies),
                            tmp_path / "unused")
    cache = ResponseCache(tmp_path / "cache.sqlite")
    for number, call in enumerate(evaluation.calls()):
        if number == count:
            break
        reply = ModelResponse('{"explanation": "fine", "score": 3, "verdict": "A"}')
        cache.put(call.request.cache_key(), judge, reply.to_cache())
    cache.close()
    return evaluation.call_count


def test_a_cached_rerun_never_imports_litellm(tmp_path):
    """A provider's model (litellm's path, not fbi's own HTTP one): every reply from the
    cache, and neither litellm (3 s) nor the report's renderers are imported."""
    total = _cache_first_calls(tmp_path, "gpt-4o-mini", ("vanilla",), 10_000, None)
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "fbi", "evaluate", "--judge",
         "gpt-4o-mini", "--dataset", "sample", "--output", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=300, cwd=OUTSIDE_CHECKOUT,
        env=env_without_keys(tmp_path))
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"{total} calls this time ({total} from the cache, 0 requests" in \
        " ".join(result.stdout.split())
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()]
    assert "litellm" not in imported and "fbi.cli" in imported
    # each command loads only its own module: not the report's HTML, not the TUI's (the
    # report's face is lazy: the headline's module alone)
    assert {m for m in imported if m.startswith("fbi.report.")} <= {"fbi.report._headline"}
    assert "fbi.cli.annotate" not in imported


@pytest.mark.slow
def test_a_check_left_for_the_first_uncached_call_stops_the_run_cleanly(tmp_path):
    """The first 256 calls come from the cache, so the key is checked only when call 301
    needs the network: the run stops there with the key named, the 300 kept."""
    _cache_first_calls(tmp_path, "gpt-4-turbo", ("vanilla", "pairwise", "reference"), 300)
    out = tmp_path / "run"
    result = fbi(tmp_path, "evaluate", "--judge", "gpt-4-turbo", "--dataset", "sample",
                    "--strategy", "vanilla", "--strategy", "pairwise", "--strategy",
                    "reference", "--concurrency", "1", "--output", str(out))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "OPENAI_API_KEY" in result.stderr and "stopped" in result.stderr
    records = (out / "judgments.jsonl").read_text().splitlines()
    assert len(records) == 300 and all('"cached":true' in r for r in records)


@pytest.mark.slow
def test_a_reply_is_cached_with_the_server_the_environment_named(tmp_path):
    """Issue 50: with OPENAI_BASE_URL naming a test server, `gpt-4-turbo`'s replies are
    that server's; run.json records it, and once it is unset (no key) no reply of that
    server is served from the cache as the provider's — the first uncached call asks for
    the key. Another server named the same way is asked, not the cache."""
    args = ("evaluate", "--judge", "gpt-4-turbo", "--category", "entity", "--limit", "1")
    with ChatServer() as server:
        done = fbi(tmp_path, *args, "--output", str(tmp_path / "run1"),
                   OPENAI_BASE_URL=server.url, OPENAI_API_KEY=KEY)
        assert done.returncode == 0, done.stderr
        served = server.counts["ok"]
        assert served >= 2
    spec = json.loads((tmp_path / "run1" / "run.json").read_text())
    assert spec["api_base"] == server.url
    unset = fbi(tmp_path, *args, "--output", str(tmp_path / "run2"))
    configuration_error(unset, "OPENAI_API_KEY")
    with ChatServer() as other:
        again = fbi(tmp_path, *args, "--output", str(tmp_path / "run3"),
                    OPENAI_BASE_URL=other.url, OPENAI_API_KEY=KEY)
        assert again.returncode == 0, again.stderr
        assert other.counts["ok"] >= 2  # its own replies, none of the first server's


NESTED_SECRET = "nested-secret-5f6e7d8c"
URL_PASSWORD = "url-pass-9z8y7x6w"
CREDENTIAL = "gw-pass-7a8b9c0d1e2f"


def echoing_script(request: dict) -> str:
    """A server that echoes the whole request body, and a credential it knows."""
    return f"echo {json.dumps(request)} {CREDENTIAL}"


def test_secrets_are_known_by_value_nested_in_urls_and_in_any_credential_variable(tmp_path):
    """Issue 50: a key nested in ``extra_body``, a URL's password, a secret query
    parameter of --api-base and a credential variable whose name does not end in _KEY
    reach no file fbi writes — run.json, judgments, the cache — however a server echoes
    them."""
    with ChatServer(script=echoing_script) as server:
        base = server.url.replace("http://", f"http://fbi:{URL_PASSWORD}@")
        done = fbi(tmp_path, "evaluate", "--judge", "openai/judge", "--api-base", base,
                   "--category", "entity", "--limit", "1", "--output", str(tmp_path / "run"),
                   "--model-arg",
                   "extra_body=" + json.dumps({"metadata": {"user": "u1",
                                                            "api_key": NESTED_SECRET}}),
                   GATEWAY_PASSWORD=CREDENTIAL)
        assert done.returncode == 0, done.stderr
        assert any(NESTED_SECRET in json.dumps(r) for r in server.requests)  # it was sent
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    for secret in (NESTED_SECRET, URL_PASSWORD, CREDENTIAL):
        assert secret.encode() not in written, secret
    spec = json.loads((tmp_path / "run" / "run.json").read_text())
    assert spec["parameters"]["model_args"]["extra_body"]["metadata"] == {
        "user": "u1", "api_key": "[secret]"}
    assert "[redacted]" in (tmp_path / "run" / "judgments.jsonl").read_text()


def test_a_secret_query_parameter_of_a_server_url_is_recorded_as_secret():
    from fbi.run_spec import RunSpec

    spec = RunSpec(fbi_version="x", model="openai/judge", created_at="t", updated_at="t",
                   api_base="https://gw.example/v1?api-key=qp-secret-123456&region=eu")
    assert spec.api_base == "https://gw.example/v1?api-key=[secret]&region=eu"


@pytest.mark.slow
def test_an_unpriced_model_s_cost_is_unknown_not_zero(tmp_path):
    """Issue 51: a model litellm's price table does not know costs an unknown amount, said
    so; a priced one its price; the embedded judge nothing (it runs here)."""
    args = ("evaluate", "--category", "entity", "--limit", "1", "--no-cache")
    with ChatServer() as server:
        unpriced = fbi(tmp_path, *args, "--judge", "openai/judge", "--api-base", server.url,
                       "--output", str(tmp_path / "a"))
        priced = fbi(tmp_path, *args, "--judge", "openai/gpt-4o-mini", "--api-base",
                     server.url, "--output", str(tmp_path / "b"))
    assert unpriced.returncode == 0 and priced.returncode == 0, unpriced.stderr
    said = " ".join(unpriced.stdout.split())
    assert "cost unknown (no price data for the model)" in said and "$0.0000" not in said
    said = " ".join(priced.stdout.split())
    assert re.search(r"tokens, \$0\.0\d{3}\.", said) and "unknown" not in said
    from fbi.estimates import estimate_cost
    from fbi.providers import cost_of

    assert cost_of("local/smollm2-135m", 1000, 100) == 0.0
    assert estimate_cost("local/smollm2-135m", 1000, 100) == 0.0
