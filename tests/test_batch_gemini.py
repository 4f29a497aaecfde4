"""Issue 41, item 5: the Gemini API's batch mode through the official google-genai SDK,
pointed at a loopback server speaking generateContent and batchGenerateContent
(``tests/gemini_server.py``), with OpenAI's rules: the same judgments as live calls,
unreadable, failed and doubled responses sent again, an ended orphan adopted by its
display name and keys rather than paid for twice, the batch price, ``fbi batch
status|cancel``."""

from __future__ import annotations

import pytest
from batch_sdk import batch_records, records, run, status_and_cancel, verdicts
from batch_sdk import env as run_env
from batch_sdk import evaluate as run_evaluate
from gemini_server import GeminiServer

pytest.importorskip("google.genai", reason="the google-genai SDK (pip install fbi[gemini])")

JUDGE = "gemini/gemini-2.5-flash"


def env(tmp_path):
    return run_env(tmp_path, ("GEMINI_API_KEY", "test-key"))


def evaluate(server, out, *extra):
    return run_evaluate(JUDGE, server.url, out, *extra)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The same calls made live (litellm's Gemini provider, generateContent)."""
    folder = tmp_path_factory.mktemp("live")
    with GeminiServer() as server:
        result = run(evaluate(server, folder / "run"), env(folder))
    assert result.returncode == 0, result.stderr
    found = verdicts(folder / "run")
    assert found and all(status == "ok" for status, _, _ in found.values())
    return found


def test_a_batch_run_gives_the_live_judgments_at_the_batch_price(tmp_path, live):
    with GeminiServer() as server:
        result = run(evaluate(server, tmp_path / "run", "--batch", "--wait", "--poll",
                              "0.01"), env(tmp_path))
        assert result.returncode == 0, result.stderr
        (batch,) = server.batches.values()
        assert batch["display"].startswith("fbi-") and len(server.live_requests) <= 1
        assert {r["metadata"]["key"] for r in batch["requests"]} == set(live)
    assert verdicts(tmp_path / "run") == live
    import litellm

    price = litellm.model_cost["gemini/gemini-2.5-flash"]
    prompt, reply = price["input_cost_per_token_batches"], price["output_cost_per_token_batches"]
    for record in records(tmp_path / "run"):
        assert record["cost"] == pytest.approx(
            record["prompt_tokens"] * prompt + record["completion_tokens"] * reply)


def test_failed_unreadable_and_doubled_responses_go_back_to_pending(tmp_path, live):
    with GeminiServer() as server:
        server.error_next, server.corrupt_next = 1, 2
        server.forge_next = '{"explanation": "x", "score": 10}'
        result = run(evaluate(server, tmp_path / "run", "--batch", "--wait", "--poll",
                              "0.01"), env(tmp_path))
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "warning:" in result.stderr
        _, second = (b["requests"] for b in server.batches.values())
        # request 1 (failed, and answered twice by the forged response) and requests 2-3
        # (responses without a reply), sent again
        assert len(second) == 3
    assert verdicts(tmp_path / "run") == live


def test_an_orphaned_batch_is_adopted_not_paid_again(tmp_path, live):
    with GeminiServer() as server:
        out = tmp_path / "run"
        assert run(evaluate(server, out, "--batch"), env(tmp_path)).returncode == 0
        (name,) = server.batches
        (out / "judgments.batches.jsonl").unlink()  # as if killed before the record
        server.get(name)
        server.get(name)  # the provider has ended it
        result = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                     env(tmp_path))
        assert result.returncode == 0, result.stderr
        assert list(server.batches) == [name]
    adopted = batch_records(out)
    assert adopted[0]["adopted"] and adopted[-1]["collected"]
    assert verdicts(out) == live


def test_status_and_cancel(tmp_path, live):
    with GeminiServer(steps=50) as server:
        out = tmp_path / "run"
        assert run(evaluate(server, out, "--batch"), env(tmp_path)).returncode == 0
        status, cancel = status_and_cancel(out, env(tmp_path))
        assert "validating" in status or "in_progress" in status
        assert "cancelled" in cancel
        server.steps = 1
        result = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                     env(tmp_path))
        assert result.returncode == 0, result.stderr
        assert len(server.batches) == 2
    assert verdicts(out) == live
