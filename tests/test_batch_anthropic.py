"""Issue 41, item 5: Anthropic's Message Batches through the official SDK, pointed at a
loopback server speaking the Messages and Message Batches APIs
(``tests/anthropic_server.py``), with OpenAI's rules: the same judgments as live calls,
unreadable and duplicated lines refused and their requests sent again, an orphaned batch
adopted rather than paid for twice, the batch price, ``fbi batch status|cancel``."""

from __future__ import annotations

import pytest
from anthropic_server import AnthropicServer
from batch_sdk import batch_records, records, run, status_and_cancel, verdicts
from batch_sdk import env as run_env
from batch_sdk import evaluate as run_evaluate

pytest.importorskip("anthropic", reason="the anthropic SDK (pip install fbi[anthropic])")

JUDGE = "anthropic/claude-haiku-4-5"


def env(tmp_path):
    return run_env(tmp_path, ("ANTHROPIC_API_KEY", "sk-ant-test"))


def evaluate(server, out, *extra):
    return run_evaluate(JUDGE, server.url, out, *extra)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The same calls made live (litellm's Anthropic provider, the Messages API)."""
    folder = tmp_path_factory.mktemp("live")
    with AnthropicServer() as server:
        result = run(evaluate(server, folder / "run"), env(folder))
    assert result.returncode == 0, result.stderr
    found = verdicts(folder / "run")
    assert found and all(status == "ok" for status, _, _ in found.values())
    return found


def test_a_batch_run_gives_the_live_judgments_at_the_batch_price(tmp_path, live):
    with AnthropicServer() as server:
        result = run(evaluate(server, tmp_path / "run", "--batch", "--wait", "--poll",
                              "0.01"), env(tmp_path))
        assert result.returncode == 0, result.stderr
        assert len(server.batches) == 1 and not server.live_requests[1:]
        (batch,) = server.batches.values()
        assert all(set(r["custom_id"]) <= set("abcdef0123456789-") and
                   len(r["custom_id"]) <= 64 for r in batch["requests"])
        assert all("response_format" not in r["params"] and r["params"]["max_tokens"]
                   for r in batch["requests"])
    assert verdicts(tmp_path / "run") == live
    import litellm

    price = litellm.model_cost["claude-haiku-4-5"]
    prompt, reply = price["input_cost_per_token_batches"], price["output_cost_per_token_batches"]
    for record in records(tmp_path / "run"):
        assert record["cost"] == pytest.approx(
            record["prompt_tokens"] * prompt + record["completion_tokens"] * reply)


def test_unreadable_and_duplicated_lines_go_back_to_pending(tmp_path, live):
    with AnthropicServer() as server:
        server.corrupt_next, server.forge_next = 3, '{"explanation": "x", "score": 10}'
        server.error_next = 1
        result = run(evaluate(server, tmp_path / "run", "--batch", "--wait", "--poll",
                              "0.01"), env(tmp_path))
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "warning:" in result.stderr
        _, second = (b["requests"] for b in server.batches.values())
        # request 1 (errored, and answered twice by the forged line before it) and
        # requests 2-4 (unreadable lines), sent again
        assert len(second) == 4
    assert verdicts(tmp_path / "run") == live


def test_an_orphaned_batch_is_adopted_not_paid_again(tmp_path, live):
    """fbi is stopped after the provider created its batch and before it recorded it (the
    record removed here): the next run finds the batch, once it has ended, by the ids
    fbi gave its requests, and collects it instead of submitting again."""
    with AnthropicServer() as server:
        out = tmp_path / "run"
        assert run(evaluate(server, out, "--batch"), env(tmp_path)).returncode == 0
        (batch_id,) = server.batches
        (out / "judgments.batches.jsonl").unlink()  # as if killed before the record
        server.retrieve(batch_id)
        server.retrieve(batch_id)  # the provider has ended it
        result = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                     env(tmp_path))
        assert result.returncode == 0, result.stderr
        assert list(server.batches) == [batch_id]  # nothing submitted twice
    adopted = batch_records(out)
    assert adopted[0]["adopted"] and adopted[-1]["collected"]
    assert verdicts(out) == live


def test_status_and_cancel(tmp_path, live):
    with AnthropicServer(steps=50) as server:
        out = tmp_path / "run"
        assert run(evaluate(server, out, "--batch"), env(tmp_path)).returncode == 0
        status, cancel = status_and_cancel(out, env(tmp_path))
        assert "in_progress" in status
        assert "completed" in cancel or "cancelling" in cancel
        server.steps = 1
        result = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                     env(tmp_path))
        assert result.returncode == 0, result.stderr
        assert len(server.batches) == 2  # the cancelled requests, sent again
    assert verdicts(out) == live
