"""What the batch tests of the providers fbi drives through their own SDKs (Anthropic,
Gemini) share: the run they make, and how its judgments are read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import OUTSIDE_CHECKOUT

SELECTION = ("--category", "entity", "--category", "grammar", "--strategy", "vanilla",
             "--strategy", "pairwise_star")


def env(tmp_path: Path, key: tuple[str, str]) -> dict[str, str]:
    """The environment of a run: its own cache, the provider's key, no network."""
    return {**os.environ, "FBI_CACHE": str(tmp_path / "cache.sqlite"), "COLUMNS": "200",
            key[0]: key[1], "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def evaluate(judge: str, url: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "fbi", "evaluate", "--judge", judge, "--api-base", url,
            "--dataset", "sample", "--output", str(out), *SELECTION, *extra]


def run(args, environment) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=environment, capture_output=True, text=True,
                          timeout=300, cwd=OUTSIDE_CHECKOUT)


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]


def verdicts(out: Path) -> dict[str, tuple]:
    """call id → (status, score, verdict); no call recorded twice."""
    found = records(out)
    assert len(found) == len({r["call_id"] for r in found})
    return {r["call_id"]: (r["status"], r["score"], r["verdict"]) for r in found}


def batch_records(out: Path) -> list[dict]:
    return [json.loads(line) for line in
            (out / "judgments.batches.jsonl").read_text().splitlines()]


def status_and_cancel(out: Path, environment: dict[str, str]) -> tuple[str, str]:
    """What `fbi batch status` and then `fbi batch cancel` print for the run."""
    status = run([sys.executable, "-m", "fbi", "batch", "status", str(out)], environment)
    assert status.returncode == 0, status.stderr
    cancel = run([sys.executable, "-m", "fbi", "batch", "cancel", str(out)], environment)
    assert cancel.returncode == 0, cancel.stderr
    return status.stdout, cancel.stdout
