"""Issue 41, item 5: the batch services fbi drives through the providers' own SDKs —
Anthropic's Message Batches (``anthropic``) and the Gemini API's batch mode
(``google-genai``) — each SDK pointed at a loopback server speaking its live and batch
APIs (``tests/anthropic_server.py``, ``tests/gemini_server.py``), with OpenAI's rules:
the same judgments as live calls, the batch price, failed, unreadable and doubled lines
sent again, an orphaned batch adopted rather than paid for twice, ``fbi batch
status|cancel``."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import pytest
from anthropic_server import AnthropicServer
from batch_sdk import batch_records, env, evaluate, records, run, status_and_cancel, verdicts
from gemini_server import GeminiServer


@dataclass(frozen=True)
class Provider:
    """One provider's test set-up: its loopback server, judge, key and what its server
    reports."""

    name: str
    server: Any
    judge: str
    key: tuple[str, str]
    sdk: str
    price: str  # the judge's entry in litellm's price table
    pending: tuple[str, ...]  # what `fbi batch status` shows of an open batch
    cancelled: tuple[str, ...]  # what `fbi batch cancel` shows after

    def advance(self, server, batch_id: str) -> None:
        """One look at the batch, as a client's poll would make (the server moves on)."""
        (server.retrieve if self.server is AnthropicServer else server.get)(batch_id)


PROVIDERS = [
    Provider("anthropic", AnthropicServer, "anthropic/claude-haiku-4-5",
             ("ANTHROPIC_API_KEY", "sk-ant-test"), "anthropic", "claude-haiku-4-5",
             ("in_progress",), ("completed", "cancelling")),
    Provider("gemini", GeminiServer, "gemini/gemini-2.5-flash",
             ("GEMINI_API_KEY", "test-key"), "google.genai", "gemini/gemini-2.5-flash",
             ("validating", "in_progress"), ("cancelled",)),
]


@pytest.fixture(scope="module", params=PROVIDERS, ids=[p.name for p in PROVIDERS])
def provider(request):
    found = request.param
    try:
        missing = importlib.util.find_spec(found.sdk) is None
    except ModuleNotFoundError:
        missing = True
    if missing:
        pytest.skip(f"the {found.sdk} SDK (pip install fbi[{found.name}])")
    return found


@pytest.fixture(scope="module")
def live(provider, tmp_path_factory):
    """The same calls made live (through litellm's provider of the same name)."""
    folder = tmp_path_factory.mktemp(f"live-{provider.name}")
    with provider.server() as server:
        result = run(evaluate(provider.judge, server.url, folder / "run"),
                     env(folder, provider.key))
    assert result.returncode == 0, result.stderr
    found = verdicts(folder / "run")
    assert found and all(status == "ok" for status, _, _ in found.values())
    return found


def batch_run(provider, server, out, tmp_path, *extra):
    return run(evaluate(provider.judge, server.url, out, "--batch", *extra),
               env(tmp_path, provider.key))


@pytest.mark.slow
def test_a_batch_run_gives_the_live_judgments_at_the_batch_price(provider, tmp_path, live):
    import litellm

    with provider.server() as server:
        result = batch_run(provider, server, tmp_path / "run", tmp_path, "--wait", "--poll",
                           "0.01")
        assert result.returncode == 0, result.stderr
        (batch,) = server.batches.values()
        assert len(server.live_requests) <= 1  # the probe, at most
    if provider.name == "anthropic":  # its ids: letters, digits, - and _, ≤ 64 characters
        assert all(set(r["custom_id"]) <= set("abcdef0123456789-") and
                   len(r["custom_id"]) <= 64 for r in batch["requests"])
        assert all("response_format" not in r["params"] and r["params"]["max_tokens"]
                   for r in batch["requests"])
    else:  # keys are the call ids; the tag in the display name
        assert {r["metadata"]["key"] for r in batch["requests"]} == set(live)
        assert batch["display"].startswith("fbi-")
    assert verdicts(tmp_path / "run") == live
    price = litellm.model_cost[provider.price]
    prompt, reply = price["input_cost_per_token_batches"], price["output_cost_per_token_batches"]
    for record in records(tmp_path / "run"):
        assert record["cost"] == pytest.approx(
            record["prompt_tokens"] * prompt + record["completion_tokens"] * reply)


@pytest.mark.slow
def test_failed_unreadable_and_doubled_lines_go_back_to_pending(provider, tmp_path, live):
    with provider.server() as server:
        server.error_next, server.corrupt_next = 1, 2
        server.forge_next = '{"explanation": "x", "score": 10}'
        result = batch_run(provider, server, tmp_path / "run", tmp_path, "--wait", "--poll",
                           "0.01")
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "warning:" in result.stderr
        _, second = (b["requests"] for b in server.batches.values())
        # request 1 (failed, and answered twice by the forged line before it) and
        # requests 2-3 (lines that are no reply), sent again
        assert len(second) == 3
    assert verdicts(tmp_path / "run") == live


@pytest.mark.slow
def test_gemini_results_naming_another_model_are_not_judgments(tmp_path, live, provider):
    """Issue 50: a batch whose results say another model made them is no reply of the
    judge (a live call refuses the same): every line goes back to pending, and the
    judgments are the live ones once the provider answers as the model asked."""
    if provider.name != "gemini":
        pytest.skip("Anthropic's batch results name no model")
    with provider.server() as server:
        server.served_as_next = "gemini-2.5-flash-lite"
        result = batch_run(provider, server, tmp_path / "run", tmp_path, "--wait", "--poll",
                           "0.01")
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "not readable replies" in " ".join(
            result.stderr.split())
        first, second = (b["requests"] for b in server.batches.values())
        assert len(second) == len(first)  # every request asked again
    assert verdicts(tmp_path / "run") == live


@pytest.mark.slow
@pytest.mark.parametrize("count", ["many", 10 ** 30, 2 ** 64, 10 ** 400, -5, 2.5])
def test_a_result_with_a_count_that_is_no_count_is_no_reply(tmp_path, live, provider, count):
    """Issues 50 and 63: a usage count that is no number, absurd (past 64 bits, past
    Python's 4,300-digit reading limit), negative or fractional is no reply — never a
    traceback on this run or the next: the requests go back to pending, and the
    judgments are the live ones once the provider answers plainly."""
    with provider.server() as server:
        server.usage_next = count
        result = batch_run(provider, server, tmp_path / "run", tmp_path, "--wait", "--poll",
                           "0.01")
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "warning:" in result.stderr
        assert len(server.batches) == 2  # the first batch's requests asked again
    assert verdicts(tmp_path / "run") == live
    assert all(r["prompt_tokens"] < 10 ** 6 for r in records(tmp_path / "run"))


@pytest.mark.slow
@pytest.mark.parametrize("shown", ["3", None, -1, 10 ** 30, [1]])
def test_batch_counts_that_are_no_counts_are_no_traceback(tmp_path, live, provider, shown):
    """Anthropic's request_counts as text, null, negative, huge or a list: the batch's
    state is read without them (they only say how far it has come), never a traceback,
    on this run or the next."""
    if provider.name != "anthropic":
        pytest.skip("request_counts are Anthropic's")
    with provider.server() as server:
        server.counts_as = shown
        for _ in range(2):  # the run, and a rerun over what it stored
            result = batch_run(provider, server, tmp_path / "run", tmp_path, "--wait",
                               "--poll", "0.01")
            assert result.returncode == 0, result.stderr
            assert "Traceback" not in result.stderr
    assert verdicts(tmp_path / "run") == live


@pytest.mark.slow
def test_an_orphaned_batch_is_adopted_not_paid_again(provider, tmp_path, live):
    """fbi is stopped after the provider created its batch and before it recorded it (the
    record removed here): the next run finds the batch, once it has ended, by what fbi
    gave its requests, and collects it instead of submitting again."""
    with provider.server() as server:
        out = tmp_path / "run"
        assert batch_run(provider, server, out, tmp_path).returncode == 0
        (batch_id,) = server.batches
        (out / "judgments.batches.jsonl").unlink()  # as if killed before the record
        provider.advance(server, batch_id)
        provider.advance(server, batch_id)  # the provider has ended it
        result = batch_run(provider, server, out, tmp_path, "--wait", "--poll", "0.01")
        assert result.returncode == 0, result.stderr
        assert list(server.batches) == [batch_id]  # nothing submitted twice
    adopted = batch_records(out)
    assert adopted[0]["adopted"] and adopted[-1]["collected"]
    assert verdicts(out) == live


@pytest.mark.slow
def test_status_and_cancel(provider, tmp_path, live):
    with provider.server(steps=50) as server:
        out = tmp_path / "run"
        assert batch_run(provider, server, out, tmp_path).returncode == 0
        status, cancel = status_and_cancel(out, env(tmp_path, provider.key))
        assert any(word in status for word in provider.pending), status
        assert any(word in cancel for word in provider.cancelled), cancel
        server.steps = 1
        result = batch_run(provider, server, out, tmp_path, "--wait", "--poll", "0.01")
        assert result.returncode == 0, result.stderr
        assert len(server.batches) == 2  # the cancelled requests, sent again
    assert verdicts(out) == live
