"""A pool of servers (--api-base given repeatedly): calls spread over loopback servers,
one of them killed mid-run, every call made and recorded once (issue 21)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OUTSIDE_CHECKOUT
from openai_server import ChatServer

from fbi.cli._config import options_of
from fbi.runs import read_spec

ROOT = Path(__file__).resolve().parents[1]


def judge_requests(server: ChatServer) -> list[dict]:
    """The judge calls a server answered (fbi's probe call left out)."""
    return [r for r in server.requests if "Reply with OK." not in json.dumps(r)]


@pytest.mark.slow
def test_two_servers_one_killed_midrun_every_call_made_and_recorded_once(tmp_path):
    dying = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"),
                              "--latency", "0.05", "--die-after", "6"],
                             stdout=subprocess.PIPE, text=True)
    try:
        dying_url = dying.stdout.readline().strip()
        with ChatServer(latency_s=0.05) as survivor:
            out = tmp_path / "run"
            env = {**os.environ, "FBI_CACHE": str(tmp_path / "cache.sqlite"),
                   "OPENAI_API_KEY": "sk-pool-test", "COLUMNS": "200"}
            result = subprocess.run(
                [sys.executable, "-m", "fbi", "evaluate", "--judge", "openai/pool",
                 "--dataset", "sample", "--api-base", survivor.url, "--api-base", dying_url,
                 "--concurrency", "4", "--output", str(out)],
                cwd=OUTSIDE_CHECKOUT, env=env, capture_output=True, text=True, timeout=300)
            survivor_answers = judge_requests(survivor)
            # The cache key names the pool by its first server, whichever server
            # answered: the same run against the first server alone makes no call.
            alone = subprocess.run(
                [sys.executable, "-m", "fbi", "evaluate", "--judge", "openai/pool",
                 "--dataset", "sample", "--api-base", survivor.url, "--no-probe",
                 "--output", str(tmp_path / "alone")],
                cwd=OUTSIDE_CHECKOUT, env=env, capture_output=True, text=True, timeout=300)
            assert alone.returncode == 0, alone.stdout + alone.stderr
            assert "144 from the cache, 0 requests" in " ".join(alone.stdout.split())
            assert len(judge_requests(survivor)) == len(survivor_answers)
        dying.wait(timeout=10)
        died_after = dying.stdout.read().count("answered")
    finally:
        dying.kill()
    assert result.returncode == 0, result.stdout + result.stderr
    assert dying.returncode == 0  # it ended itself after its sixth reply
    lines = (out / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    ids = [r["call_id"] for r in records]
    assert len(ids) == len(set(ids)) == 144  # the sample's 72 instances × 2 calls
    assert all(r["status"] != "error" for r in records)
    # six replies came from the killed server before it died, one of them its probe (the
    # probe asks every server of a pool); every other call was answered by the survivor,
    # exactly once (the sample repeats 6 gold prompts, which the cache answers)
    cached = sum(r["cached"] for r in records)
    assert died_after == 6 and cached == 6
    assert len(survivor_answers) == 144 - (6 - 1) - cached
    prompts = [json.dumps(r["messages"]) for r in survivor_answers]
    assert len(set(prompts)) == len(prompts)
    spec = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert spec["api_base"] == survivor.url
    assert spec["settings"]["api_pool"] == [survivor.url, dying_url]
    # --resume asks for the same pool again
    assert options_of(read_spec(out / "run.json"), out)["api_base"] == [survivor.url,
                                                                        dying_url]


def test_batch_with_a_pool_is_refused(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "fbi", "evaluate", "--judge", "openai/pool", "--batch",
         "--api-base", "http://127.0.0.1:1/v1", "--api-base", "http://127.0.0.1:2/v1",
         "--output", str(tmp_path / "run")], cwd=OUTSIDE_CHECKOUT, capture_output=True,
        text=True, timeout=120, env={**os.environ, "OPENAI_API_KEY": "sk-x"})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "one --api-base" in result.stderr
    assert not (tmp_path / "run").exists()


def test_a_pool_with_no_server_answering_is_one_message_before_anything_is_written(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "fbi", "evaluate", "--judge", "openai/pool",
         "--api-base", "http://127.0.0.1:9/v1", "--api-base", "http://127.0.0.1:8/v1",
         "--output", str(tmp_path / "run")], cwd=OUTSIDE_CHECKOUT, capture_output=True,
        text=True, timeout=120, env={**os.environ, "OPENAI_API_KEY": "sk-x"})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "all 2 servers of the pool (unreachable)" in " ".join(result.stderr.split())
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------ issue 38: pools that lie


def evaluate(tmp_path, *servers: str, extra: tuple[str, ...] = (), judge: str = "openai/judge"):
    args = [sys.executable, "-m", "fbi", "evaluate", "--judge", judge, "--dataset", "sample",
            "--category", "entity", "--output", str(tmp_path / "run"), "--no-cache", *extra]
    for url in servers:
        args += ["--api-base", url]
    return subprocess.run(args, cwd=OUTSIDE_CHECKOUT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "OPENAI_API_KEY": "sk-pool-test",
                                            "COLUMNS": "200"})


def test_a_server_without_choices_is_routed_around_and_never_recorded(tmp_path):
    """A pool server answering 200 with ``choices: []`` fails its call, which another
    server makes at once; the server is left out for its cooldown (frozen here, so it is
    asked exactly once). Every call is recorded, from the honest server."""
    import asyncio
    import random

    from fbi.providers import ModelClient, ModelRequest

    with ChatServer(empty_choices=True) as liar, ChatServer() as honest:
        client = ModelClient(api_pool=(liar.url, honest.url), probe_first=False)
        client.pool.clock = lambda: 0.0  # the cooldown never ends
        client.pool.rng = random.Random(1)
        requests = [ModelRequest("openai/judge", (("user", f"Rate {n}: an integer from 1 "
                                                            "to 10"),), api_base=liar.url)
                    for n in range(40)]

        async def all_of_them():  # one at a time: the cooldown counts from the failure
            return [await client.complete(r) for r in requests]

        replies = asyncio.run(all_of_them())
        assert all('"score"' in r.text for r in replies)
        assert liar.counts["ok"] == 1 and honest.counts["ok"] == 40
        assert client.calls_made == 41


@pytest.mark.slow
@pytest.mark.parametrize("served", ["judge-70b", "judge-mini", "", "Judge-Large"])
def test_a_pool_server_named_like_the_model_or_naming_none_is_left_out(tmp_path, served):
    """Issue 50: a replica whose served name merely starts like the model asked for (or
    is empty) serves another model: left out at its probe, no verdict of it recorded."""
    with ChatServer(served_as=served) as liar, ChatServer() as honest:
        result = evaluate(tmp_path, honest.url, liar.url)
        assert result.returncode == 0, result.stderr
        assert liar.counts["ok"] == 1  # the probe, and nothing after it
        assert "is left out (wrong_model)" in " ".join(result.stderr.split())


@pytest.mark.slow
@pytest.mark.parametrize("served", ["judge-2024-08-06", "judge-0613", "judge:latest",
                                    "/models/judge", "JUDGE"])
def test_a_pool_server_of_a_release_of_the_model_stays(tmp_path, served):
    """A server naming a release of the model stays in the pool. Each call picks a server
    at random: over 24 calls (four categories) the chance that it is never picked after
    its probe is 2⁻²⁴ (with the 6 calls of one category it was 1 in 64, a flaky test)."""
    with ChatServer(served_as=served) as release, ChatServer() as honest:
        result = evaluate(tmp_path, honest.url, release.url, extra=(
            "--category", "grammar", "--category", "spelling", "--category", "number-errors"))
        assert result.returncode == 0, result.stderr
        assert release.counts["ok"] > 1 and "left out" not in result.stderr


@pytest.mark.slow
def test_a_pool_server_of_another_model_is_left_out_with_a_warning(tmp_path):
    """Its probe reply names another model: it is left out of the run (a warning names it)
    and no verdict of it is recorded; without the probe, its first call does the same."""
    with ChatServer(served_as="other-model") as liar, ChatServer() as honest:
        result = evaluate(tmp_path, honest.url, liar.url)
        assert result.returncode == 0, result.stderr
        assert liar.counts["ok"] == 1  # the probe, and nothing after it
        said = " ".join(result.stderr.split())
        assert "is left out (wrong_model)" in said and "'other-model'" in said
        records = [json.loads(line) for line in
                   (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
        assert records and all(r["status"] == "ok" for r in records)
        unprobed = evaluate(tmp_path / "b", liar.url, honest.url,
                            extra=("--no-probe", "--concurrency", "1"))
        assert unprobed.returncode == 0, unprobed.stderr
        assert liar.counts["ok"] <= 2  # at most one call more, then left out for good
        records = [json.loads(line) for line in
                   (tmp_path / "b" / "run" / "judgments.jsonl").read_text().splitlines()]
        assert records and all(r["status"] == "ok" for r in records)


def test_one_server_of_another_model_is_refused_at_the_probe(tmp_path):
    with ChatServer(served_as="other-model") as liar:
        result = evaluate(tmp_path, liar.url)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    said = " ".join(result.stderr.split())
    assert "answered as model 'other-model', not 'judge'" in said and "--judge openai/NAME" \
        in said
    assert not (tmp_path / "run").exists()


def test_a_pool_with_no_honest_server_stops_with_a_message(tmp_path):
    with ChatServer(empty_choices=True) as first, ChatServer(empty_choices=True) as second:
        result = evaluate(tmp_path, first.url, second.url, extra=("--retries", "0"))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    said = " ".join(result.stderr.split())
    assert "calls in a row failed (unreachable)" in said
    assert "every server of the pool failed" in said
    records = [json.loads(line) for line in
               (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    assert all(r["status"] == "error" for r in records)  # nothing recorded as a verdict


def test_replies_of_another_model_through_one_server_are_failed_calls(tmp_path):
    """Without the probe, a server of another model fails every call (a configuration
    failure: the circuit breaker stops the run after five); no verdict is recorded."""
    with ChatServer(served_as="other-model") as liar:
        result = evaluate(tmp_path, liar.url, extra=("--no-probe", "--concurrency", "1"))
        asked = liar.counts["ok"]
    assert result.returncode == 1 and "calls in a row failed (wrong_model)" in result.stderr
    assert asked == 5  # no retries, no call after the breaker
    records = [json.loads(line) for line in
               (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "error" and r["score"] is None for r in records)
