"""A pool of servers (--api-base given repeatedly): calls spread over loopback servers,
one of them killed mid-run, every call made and recorded once (issue 21)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import OUTSIDE_CHECKOUT
from openai_server import ChatServer

from fbi.cli._config import options_of
from fbi.runs import read_spec

ROOT = Path(__file__).resolve().parents[1]


def judge_requests(server: ChatServer) -> list[dict]:
    """The judge calls a server answered (fbi's probe call left out)."""
    return [r for r in server.requests if "Reply with OK." not in json.dumps(r)]


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
    # six replies came from the killed server before it died; every other call was
    # answered by the survivor, exactly once (the sample repeats 6 gold prompts, which
    # the cache answers)
    cached = sum(r["cached"] for r in records)
    assert died_after == 6 and cached == 6
    assert len(survivor_answers) == 144 - 6 - cached
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
