"""Issue 22, item 3: fbi writes only into folders it made, and never over a file it did
not write (fbi/outputs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_server import ChatServer

from fbi.cli import main

ENV = {"OPENAI_API_KEY": "sk-test", "COLUMNS": "200"}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*") if p.is_file()}


def evaluate(server: ChatServer, out: Path, tmp_path: Path, *extra: str):
    return CliRunner().invoke(main, [
        "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--output", str(out),
        "--strategy", "vanilla", "--category", "entity", "--cache",
        str(tmp_path / "cache.sqlite"), *extra], env=ENV)


@pytest.mark.slow
def test_evaluate_refuses_a_users_folder_and_writes_nothing(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "instances.jsonl").write_text("my own rows\n")
    before = snapshot(out)
    with ChatServer() as server:
        for extra in ((), ("--dry-run",)):
            result = evaluate(server, out, tmp_path, *extra)
            assert result.exit_code == 2, result.output
            assert "holds files fbi did not write (instances.jsonl)" in result.output
            assert snapshot(out) == before  # not a byte written: no lock, no run.json
        assert server.counts["ok"] == 0  # refused before the probe call
        forced = evaluate(server, out, tmp_path, "--force")
        assert forced.exit_code == 2 and "instances.jsonl are not fbi's" in forced.output
        assert snapshot(out) == before
        (out / "instances.jsonl").rename(out / "my-rows.jsonl")
        forced = evaluate(server, out, tmp_path, "--force")
        assert forced.exit_code == 0, forced.output
        assert (out / "my-rows.jsonl").read_text() == "my own rows\n"
        assert json.loads((out / ".fbi-output.json").read_text())["theirs"] == ["my-rows.jsonl"]
        again = evaluate(server, out, tmp_path)  # fbi's folder now: resumes without --force
        assert again.exit_code == 0, again.output


def test_report_output_follows_the_same_rule(tmp_path):
    run = tmp_path / "run"
    with ChatServer() as server:
        assert evaluate(server, run, tmp_path).exit_code == 0
    elsewhere = tmp_path / "notes"
    elsewhere.mkdir()
    (elsewhere / "report.md").write_text("my report\n")
    runner = CliRunner()
    refused = runner.invoke(main, ["report", str(run), "--output", str(elsewhere)])
    assert refused.exit_code == 2 and "fbi did not write" in refused.output
    clash = runner.invoke(main, ["report", str(run), "--output", str(elsewhere), "--force"])
    assert clash.exit_code == 2 and "report.md are not fbi's" in clash.output
    beside = runner.invoke(main, ["report", str(run), "--output", str(elsewhere), "--force",
                                  "--format", "json", "--format", "csv"])
    assert beside.exit_code == 0, beside.output
    assert (elsewhere / "report.md").read_text() == "my report\n"
    assert (elsewhere / "summary.json").exists() and (elsewhere / "report.csv").exists()
    # later, without --force, fbi still never writes over their report.md
    later = runner.invoke(main, ["report", str(run), "--output", str(elsewhere)])
    assert later.exit_code == 2 and "report.md are not fbi's" in later.output
    assert (elsewhere / "report.md").read_text() == "my report\n"
    # a run folder is fbi's: the default report goes there
    assert runner.invoke(main, ["report", str(run)]).exit_code == 0
