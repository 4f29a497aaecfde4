"""No command waits on a FIFO (issue 63): wherever fbi reads a file a user names — a
dataset, a config, a template, labels, trajectories, a run's files, a baseline's
judgments, a watch's history, the response cache — a named pipe is refused at once with
one message, exit 2, instead of blocking until someone writes to it. Each command runs
in its own process, so a hang would end at the time-out (a hang guard, not a speed
bound) rather than hold the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OUTSIDE_CHECKOUT

FIXTURE = Path(__file__).parent / "fixtures" / "report_run"
ENV = {**os.environ, "OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


def run_copy(tmp_path: Path, name: str = "run") -> Path:
    folder = tmp_path / name
    shutil.copytree(FIXTURE, folder)
    return folder


def case_dataset(tmp_path):
    return ["datasets", "validate", str(fifo(tmp_path / "rows.jsonl"))]


def case_parquet(tmp_path):
    return ["datasets", "show", str(fifo(tmp_path / "rows.parquet"))]


def case_folder_member(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text("id,question\n1,x\n")
    fifo(tmp_path / "data" / "b.csv")
    return ["datasets", "validate", str(tmp_path / "data")]


def case_config(tmp_path):
    return ["evaluate", "--config", str(fifo(tmp_path / "c.yaml")), "--dry-run"]


def case_system_prompt(tmp_path):
    return ["evaluate", "--system-prompt", str(fifo(tmp_path / "s.txt")), "--dry-run",
            "--output", str(tmp_path / "o")]


def case_template(tmp_path):
    fifo(tmp_path / "prompts" / "mine.jinja")
    return ["evaluate", "--prompts", str(tmp_path / "prompts"), "--strategy", "mine",
            "--dry-run", "--output", str(tmp_path / "o")]


def case_human(tmp_path):
    return ["report", str(run_copy(tmp_path)), "--human", str(fifo(tmp_path / "l.csv")),
            "--output", str(tmp_path / "r")]


def case_judgments(tmp_path):
    folder = run_copy(tmp_path)
    fifo(folder / "judgments.jsonl")
    return ["report", str(folder), "--output", str(tmp_path / "r")]


def case_run_spec(tmp_path):
    folder = run_copy(tmp_path)
    fifo(folder / "run.json")
    return ["report", str(folder), "--output", str(tmp_path / "r")]


def case_instances(tmp_path):
    folder = run_copy(tmp_path)
    fifo(folder / "instances.jsonl")
    return ["report", str(folder), "--output", str(tmp_path / "r")]


def case_baseline(tmp_path):
    folder = run_copy(tmp_path, "baseline")
    fifo(folder / "judgments.jsonl")
    return ["gate", "sample", "--judge", "openai/j", "--api-base", "http://127.0.0.1:9/v1",
            "--baseline", str(folder), "--output", str(tmp_path / "g")]


def case_watch_history(tmp_path):
    fifo(tmp_path / "w" / "watch.jsonl")
    return ["watch", "sample", "--judge", "openai/j", "--api-base", "http://127.0.0.1:9/v1",
            "--output", str(tmp_path / "w"), "--canary", "1"]


def case_labels(tmp_path):
    return ["label", str(run_copy(tmp_path)), "--output", str(fifo(tmp_path / "l.csv")),
            "--annotator", "ana"]


def case_trajectories(tmp_path):
    return ["trajectories", "validate", str(fifo(tmp_path / "t.jsonl"))]


def case_cache(tmp_path):
    return ["cache", "info", "--cache", str(fifo(tmp_path / "c.sqlite"))]


CASES = [case_dataset, case_parquet, case_folder_member, case_config, case_system_prompt,
         case_template, case_human, case_judgments, case_run_spec, case_instances,
         case_baseline, case_watch_history, case_labels, case_trajectories, case_cache]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.__name__[5:] for c in CASES])
def test_a_fifo_is_refused_at_once(tmp_path, case):
    args = case(tmp_path)
    try:
        result = subprocess.run([sys.executable, "-m", "fbi", *args], capture_output=True,
                                text=True, env=ENV, cwd=OUTSIDE_CHECKOUT, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail(f"fbi {' '.join(args)} waited on a FIFO")
    said = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2, said
    assert "not a regular file" in said or "FIFO" in said, said
    assert "Traceback" not in said
