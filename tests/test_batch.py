"""Issue 13, item 3: provider batch APIs, against a loopback server that implements the
OpenAI Files and Batches endpoints (tests/openai_server.py, BatchService)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import OUTSIDE_CHECKOUT
from openai_server import ChatServer

from fbi.cli import main
from fbi.settings import ModelSettings

JUDGE = "openai/judge"
SELECTION = ("--category", "entity", "--category", "grammar", "--strategy", "vanilla",
             "--strategy", "pairwise_star")
CALLS = 3 * 2 * 2 * 2  # instances × categories × strategies × roles


def env(tmp_path: Path, cache: str = "cache.sqlite") -> dict[str, str]:
    return {**os.environ, "FBI_CACHE": str(tmp_path / cache), "COLUMNS": "200",
            "OPENAI_API_KEY": "sk-batch-test"}


def evaluate(server: ChatServer, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "fbi", "evaluate", "--judge", JUDGE, "--api-base",
            server.url, "--dataset", "sample", "--output", str(out), *SELECTION, *extra]


def run(args: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=environment, capture_output=True, text=True, timeout=300,
                          cwd=OUTSIDE_CHECKOUT)


def verdicts(out: Path) -> dict[str, tuple]:
    records = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(records) == len({r["call_id"] for r in records})  # no duplicates
    return {r["call_id"]: (r["status"], r["score"], r["verdict"]) for r in records}


def batches(out: Path) -> dict[str, dict]:
    latest = {}
    for line in (out / "judgments.batches.jsonl").read_text().splitlines():
        record = json.loads(line)
        latest[record["batch_id"]] = record
    return latest


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The same calls made live, for comparison."""
    folder = tmp_path_factory.mktemp("live")
    with ChatServer() as server:
        result = run(evaluate(server, folder / "run"), env(folder))
    assert result.returncode == 0, result.stderr
    return verdicts(folder / "run")


@pytest.mark.slow
def test_a_batch_run_gives_the_live_judgments_and_fills_the_cache(tmp_path, live):
    with ChatServer() as server:
        server.batches.fail_once = {"sample-entity-1|vanilla|gold"}
        out = tmp_path / "run"
        result = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                     env(tmp_path))
        assert result.returncode == 0, result.stderr
        assert server.counts["ok"] == 1  # the probe: every judgment came through batches
        assert verdicts(out) == live
        recorded = batches(out)
        assert len(recorded) == 2 and all(b["collected"] for b in recorded.values())
        retried = [b for b in recorded.values() if len(b["custom_ids"]) == 1]
        assert retried[0]["custom_ids"] == ["sample-entity-1|vanilla|gold"]
        # a later live run of the same calls makes none: the batch filled the cache
        again = run(evaluate(server, tmp_path / "again"), env(tmp_path))
        assert again.returncode == 0 and server.counts["ok"] == 1
        assert f"{CALLS} from the cache" in again.stdout


@pytest.mark.slow
def test_submit_then_stop_then_collect(tmp_path, live):
    """Without --wait the command submits and exits 0; `fbi batch status` shows the batch;
    the same command collects it later."""
    with ChatServer() as server:
        out = tmp_path / "run"
        submitted = run(evaluate(server, out, "--batch", "--label", "batched"), env(tmp_path))
        assert submitted.returncode == 0, submitted.stderr
        assert f"{CALLS} calls are in provider batches" in submitted.stdout
        # Issue 26: what was submitted, not "0 calls … N requests" and an empty table
        said = " ".join(submitted.stdout.split())
        assert f"Submitted {CALLS} requests in provider batches this time." in said
        assert f"0 requests to the model, {CALLS} submitted in batches" in said
        assert "No judgments in" in said and "% undetected" not in said
        status = run([sys.executable, "-m", "fbi", "batch", "status", str(out)],
                     {**env(tmp_path), "COLUMNS": "80"})
        assert status.returncode == 0 and "batch_1" in status.stdout, status.stderr
        # Issue 26: the judge named as everywhere else, label first
        assert f"Batches of batched ({JUDGE}) in {out}" in " ".join(status.stdout.split())
        assert max(map(len, status.stdout.splitlines())) <= 80 and "…" not in status.stdout
        collected = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                        env(tmp_path))
        assert collected.returncode == 0, collected.stderr
        assert len(server.batches.batches) == 1  # collected, never submitted twice
    assert verdicts(out) == live


@pytest.mark.slow
def test_a_kill_between_submit_and_collect_loses_nothing(tmp_path, live):
    with ChatServer() as server:
        out = tmp_path / "run"
        process = subprocess.Popen(evaluate(server, out, "--batch", "--wait", "--poll", "30"),
                                   env=env(tmp_path), cwd=OUTSIDE_CHECKOUT,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (out / "judgments.batches.jsonl").exists():
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert len(batches(out)) == 1
        resumed = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                      env(tmp_path))
        assert resumed.returncode == 0, resumed.stderr
        assert len(server.batches.batches) == 1
    assert verdicts(out) == live


@pytest.mark.slow
def test_an_expired_batch_is_resubmitted_and_a_cancelled_one_too(tmp_path, live):
    with ChatServer() as server:
        server.batches.expire_next = True
        out = tmp_path / "expired"
        result = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                     env(tmp_path))
        assert result.returncode == 0, result.stderr
        states = [b["status"] for b in batches(out).values()]
        assert states == ["expired", "completed"]
        assert verdicts(out) == live

        cancelled = tmp_path / "cancelled"
        fresh = env(tmp_path, "other-cache.sqlite")
        assert run(evaluate(server, cancelled, "--batch"), fresh).returncode == 0
        cancel = run([sys.executable, "-m", "fbi", "batch", "cancel", str(cancelled)], fresh)
        assert cancel.returncode == 0 and "cancelled" in cancel.stdout, cancel.stderr
        result = run(evaluate(server, cancelled, "--batch", "--wait", "--poll", "0.01"), fresh)
        assert result.returncode == 0, result.stderr
        assert [b["status"] for b in batches(cancelled).values()] == ["cancelled", "completed"]
    assert verdicts(cancelled) == live


@pytest.mark.slow
def test_batch_files_are_split_at_the_provider_limit(tmp_path, monkeypatch):
    from fbi import load_dataset
    from fbi.cache import ResponseCache
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.providers import ModelClient
    from fbi.runs import BatchOptions, _batch

    monkeypatch.setattr(_batch, "MAX_REQUESTS_PER_FILE", 5)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-batch-test")
    dataset = load_dataset("sample").select((), ("entity",), False, None)
    with ChatServer() as server:
        config = EvaluationConfig(model=ModelSettings(model=JUDGE, api_base=server.url),
                                  strategies=("vanilla",))
        evaluation = Evaluation(dataset, config, tmp_path / "run")
        client = ModelClient(cache=ResponseCache(tmp_path / "cache.sqlite"))
        totals = evaluation.run(client, batch=BatchOptions(wait=True, poll_s=0.01))
        sizes = sorted(b["request_counts"]["total"] for b in server.batches.batches.values())
    assert totals.completed == 6 and totals.in_batches == 0
    assert sizes == [1, 5]


@pytest.mark.slow
def test_batch_mode_refuses_what_it_cannot_keep(tmp_path):
    with ChatServer() as server:
        budget = run(evaluate(server, tmp_path / "a", "--batch", "--max-cost", "1"),
                     env(tmp_path))
    assert budget.returncode == 2 and "--max-cost cannot be kept" in budget.stderr
    other = run([sys.executable, "-m", "fbi", "evaluate", "--judge",
                 "groq/llama-3.1-8b-instant", "--batch", "--output",
                 str(tmp_path / "b")], {**env(tmp_path), "GROQ_API_KEY": "x" * 20})
    assert other.returncode == 2 and "not groq" in other.stderr
    assert "Traceback" not in budget.stderr + other.stderr


def test_batch_cost_uses_the_providers_batch_prices():
    from fbi.providers import batch_cost, import_litellm

    prices = import_litellm().model_cost["gpt-4o"]
    expected = 1000 * prices["input_cost_per_token_batches"] + \
        100 * prices["output_cost_per_token_batches"]
    assert batch_cost("gpt-4o", 1000, 100) == pytest.approx(expected)
    assert batch_cost("openai/no-such-model", 1000, 100) is None


@pytest.mark.slow
def test_mistral_batches_give_the_live_judgments(tmp_path, live):
    """Mistral's Batch API (jobs, the model on the job, lines of custom_id and body)
    through litellm, against the loopback server's implementation of it."""
    with ChatServer() as server:
        out = tmp_path / "run"
        environment = {**env(tmp_path), "MISTRAL_API_KEY": "mk-batch-test"}
        args = evaluate(server, out, "--seed", "3", "--batch", "--wait", "--poll", "0.01")
        args[args.index(JUDGE)] = "mistral/judge"
        result = run(args, environment)
        assert result.returncode == 0, result.stderr
        assert server.counts["ok"] == 1 and server.counts["batch"] == CALLS  # probe only
        assert verdicts(out) == live
        (job,) = server.batches.batches.values()
        assert job["model"] == "judge" and job["status"] == "completed"
        lines = [json.loads(line) for line in
                 server.batches.files[job["input_file_id"]].decode().splitlines()]
        assert all(set(line) == {"custom_id", "body"} for line in lines)
        assert all("model" not in line["body"] and line["body"]["random_seed"] == 3
                   for line in lines)
        (recorded,) = batches(out).values()
        assert recorded["provider"] == "mistral" and recorded["collected"]
        # litellm cannot cancel a Mistral job: an open one is named, and kept
        waiting = tmp_path / "waiting"
        fresh = {**environment, "FBI_CACHE": str(tmp_path / "other-cache.sqlite")}
        args[args.index(str(out))] = str(waiting)
        assert run(args[:args.index("--wait")], fresh).returncode == 0
        refused = run([sys.executable, "-m", "fbi", "batch", "cancel", str(waiting)], fresh)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert "cannot cancel mistral batches" in refused.stderr
        assert run(args, fresh).returncode == 0 and verdicts(waiting) == live


@pytest.mark.slow
def test_batch_mode_names_the_providers_it_drives(tmp_path):
    environment = {**env(tmp_path), "GROQ_API_KEY": "test"}
    with ChatServer() as server:
        args = evaluate(server, tmp_path / "run", "--batch")
        args[args.index(JUDGE)] = "groq/llama-3.1-8b-instant"
        args[args.index("--api-base") + 1:args.index("--api-base") + 2] = [server.url]
        result = run(args, environment)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "OpenAI, Azure, Mistral, Anthropic, Gemini" in result.stderr
    assert "not groq" in result.stderr


def test_help_and_docs_name_the_providers_the_code_drives():
    """Issue 41, item 5: `--batch --help` and the batch guide list the same providers,
    the ones in fbi's table of batch protocols."""
    from pathlib import Path

    from fbi.providers import BATCH_PROTOCOLS

    names = [protocol.name for protocol in BATCH_PROTOCOLS.values()]
    shown = CliRunner().invoke(main, ["evaluate", "--help"], terminal_width=200).output
    assert ", ".join(names) in " ".join(shown.split())
    guide = (Path(__file__).parents[1] / "docs" / "how-to" / "batch.md").read_text()
    providers = " ".join(guide.split("Providers:", 1)[1].split("Other providers")[0].split())
    for name in names:
        assert name in providers, name


@pytest.mark.slow
def test_unreadable_lines_in_the_output_file_go_back_to_pending(tmp_path, live):
    """Issue 22: lines that are no reply (not JSON, not UTF-8, an array, a reply of the
    wrong shape) are those requests' failures; the rest is collected, no traceback."""
    with ChatServer() as server:
        server.batches.corrupt_next = 4
        out = tmp_path / "run"
        result = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                     env(tmp_path))
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert "warning:" in result.stderr and "4 line(s)" in result.stderr
        first, second = batches(out).values()
        assert first["bad_lines"] == 4 and len(first["failed_ids"]) == 4
        assert second["custom_ids"] == first["failed_ids"]  # only those, submitted again
    assert verdicts(out) == live


@pytest.mark.slow
def test_a_kill_between_create_and_record_submits_nothing_twice(tmp_path, live):
    """Issue 22: fbi is killed after the provider created its batch and before fbi
    recorded it; the next run finds the batch by its tag and collects it."""
    with ChatServer() as server:
        out = tmp_path / "run"
        killed: list[subprocess.Popen] = []

        def kill_the_client(batch_id: str) -> None:
            killed[0].send_signal(signal.SIGKILL)
            killed[0].wait()

        server.batches.on_create = kill_the_client
        killed.append(subprocess.Popen(evaluate(server, out, "--batch"), env=env(tmp_path),
                                       cwd=OUTSIDE_CHECKOUT, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL))
        assert killed[0].wait(timeout=120) == -signal.SIGKILL
        record = out / "judgments.batches.jsonl"
        assert not record.exists() or not record.read_text().strip()  # fbi never knew
        assert len(server.batches.batches) == 1
        server.batches.on_create = None
        resumed = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                      env(tmp_path))
        assert resumed.returncode == 0, resumed.stderr
        assert len(server.batches.batches) == 1  # adopted, not submitted again
        (adopted,) = batches(out).values()
        assert adopted["adopted"] and adopted["collected"] and len(adopted["custom_ids"]) == CALLS
        assert server.counts["batch"] == CALLS  # every request answered once
    assert verdicts(out) == live


@pytest.mark.slow
@pytest.mark.parametrize("forge, said", [
    ("infinity", "1 line(s) of the provider's output were not readable replies"),
    ("duplicate", "1 request(s) came back more than once"),
])
def test_a_lying_output_file_is_neither_trusted_nor_cached(tmp_path, live, forge, said):
    """Issue 38: a line whose usage is Infinity is a bad line (no traceback, its request
    submitted again); a request answered twice (a forged line first) trusts neither
    line: nothing of it is recorded or cached, and it is asked again."""
    with ChatServer() as server:
        server.batches.forge_next = forge
        out = tmp_path / "run"
        result = run(evaluate(server, out, "--batch", "--wait", "--poll", "0.01"),
                     env(tmp_path))
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        assert said in " ".join(result.stderr.split())
        first, second = batches(out).values()
        assert len(second["custom_ids"]) == 1 and second["custom_ids"] == first["failed_ids"]
        if forge == "duplicate":
            assert first["duplicated_ids"] == second["custom_ids"]
    assert verdicts(out) == live
    for path in (out / "judgments.jsonl", tmp_path / "cache.sqlite"):
        assert b"FORGED" not in path.read_bytes()
