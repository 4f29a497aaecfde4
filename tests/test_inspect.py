"""Inspect interop (issue 42, item 2): `fbi export inspect` writes logs Inspect's own
reader opens with the run's counts, and fbi's suite runs as an Inspect task — through
Inspect's OpenAI-compatible provider against the loopback server — with the replies and
undetected rates of `fbi evaluate`. Expected figures come from the runs' judgments.jsonl
read by hand (tests/run_records.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from run_records import by_hand, latest_records, rate

from fbi.cli import main

pytest.importorskip("inspect_ai", reason="the inspect extra is in the dev extra")
from inspect_ai.log import read_eval_log

STRATEGIES = ("vanilla", "pairwise")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("inspect") / "run"
    with ChatServer() as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--dataset",
            "sample", *(a for s in STRATEGIES for a in ("--strategy", s)), "--label",
            "judge/A", "--output", str(folder), "--no-cache"],
            env={"OPENAI_API_KEY": "sk-test"})
    assert result.exit_code == 0, result.output
    return folder


@pytest.mark.slow
def test_an_exported_run_opens_in_inspects_reader_with_its_counts(run, tmp_path):
    result = CliRunner().invoke(main, ["export", "inspect", str(run), "--output",
                                       str(tmp_path / "logs")])
    assert result.exit_code == 0, result.output
    log = read_eval_log(str(tmp_path / "logs" / "judge-A.eval"))
    records = {r["call_id"]: r for r in latest_records(run)}
    hand = by_hand(run)
    assert log.status == "success" and log.eval.model == "openai/judge"
    assert len(log.samples) == len(records) == log.results.total_samples
    values = {"detected": "C", "retained": "C", "undetected": "I", "penalised": "I",
              "unparseable": "N"}
    for sample in log.samples:
        record = records[sample.id]
        assert sample.output.completion == record["raw_output"]
        assert sample.metadata["category"] == record["category"]
        assert sample.metadata["strategy"] == record["strategy"]
        assert sample.metadata["role"] == record["role"]
        assert sample.metadata["prompt_matches"] is True  # the input is what was sent
        assert sample.output.usage.input_tokens == record["prompt_tokens"]
        assert sample.scores["fbi"].value == values[
            hand[(record["instance_id"], record["strategy"])]]
    for strategy in STRATEGIES:
        assert log.results.scores[0].metrics[f"undetected_{strategy}"].value == \
            pytest.approx(rate(hand, strategy))
    usage = log.stats.model_usage["openai/judge"]
    assert usage.input_tokens == sum(r["prompt_tokens"] for r in records.values())


def test_export_refuses_a_folder_of_someone_elses_and_a_folder_that_is_no_run(run, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    refused = CliRunner().invoke(main, ["export", "inspect", str(run), "--output",
                                        str(theirs)])
    assert refused.exit_code == 2 and "holds files fbi did not write" in refused.output
    assert (theirs / "notes.txt").read_text() == "mine" and len(list(theirs.iterdir())) == 1
    not_a_run = CliRunner().invoke(main, ["export", "inspect", str(tmp_path), "--output",
                                          str(tmp_path / "out")])
    assert not_a_run.exit_code == 2 and "not a run folder" in not_a_run.output


@pytest.mark.slow
def test_fbis_suite_as_an_inspect_task_gives_fbi_evaluates_replies_and_rates(run, tmp_path):
    """`inspect eval fbi/fbi_judge` (the task the package registers) with Inspect's
    OpenAI-compatible provider against a loopback server answering as the one the run
    used: every sample's reply is the run's reply for the same call, and the task's
    undetected rates are the run's, worked by hand."""
    with ChatServer() as server:
        env = {**os.environ, "LOOPBACK_API_KEY": "sk-test", "LOOPBACK_BASE_URL": server.url,
               "INSPECT_LOG_DIR": str(tmp_path / "logs")}
        done = subprocess.run(
            [sys.executable, "-m", "inspect_ai", "eval", "fbi/fbi_judge", "--model",
             "openai-api/loopback/judge", "-T", "dataset=sample", "-T",
             f"strategies={','.join(STRATEGIES)}", "--display", "none", "--no-log-images"],
            env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success", log.error
    records = {r["call_id"]: r for r in latest_records(run)}
    assert {s.id for s in log.samples} == set(records)
    for sample in log.samples:
        assert sample.output.completion == records[sample.id]["raw_output"], sample.id
        judgment = sample.scores["fbi_verdict"].metadata["judgment"]
        for field in ("score", "verdict", "status"):
            assert judgment[field] == records[sample.id][field]
    metrics = log.results.scores[0].metrics
    hand = by_hand(run)
    for strategy in STRATEGIES:
        assert metrics[strategy].value == pytest.approx(rate(hand, strategy))
    assert json.loads(json.dumps(log.eval.task_args))["dataset"] == "sample"


def test_fbis_eval_writer_gives_what_inspects_own_writer_gives(run, tmp_path):
    """Issue 51: fbi writes the `.eval` zip itself, a sample at a time (Inspect's writer
    is quadratic in the samples); Inspect's reader must read it as it reads its own
    writer's file of the same log — samples, summaries, header — and `inspect view`'s
    sample list (the summaries) must hold every sample. (`fbi export inspect` writes
    through it: the first test reads that file.)"""
    from inspect_ai.log import read_eval_log_sample_summaries, write_eval_log

    from fbi.interop._eval_zip import write_eval_zip
    from fbi.interop._inspect_log import run_as_eval_log
    from fbi.runs import load_run

    log = run_as_eval_log(load_run(run))  # (its ids are random: one log for both)
    write_eval_log(log, str(tmp_path / "theirs.eval"))
    assert write_eval_zip(log.model_copy(update={"samples": None}), iter(log.samples),
                          tmp_path / "ours.eval") == len(log.samples)
    ours = read_eval_log(str(tmp_path / "ours.eval"))
    theirs = read_eval_log(str(tmp_path / "theirs.eval"))
    assert ours.model_dump(exclude={"location", "etag"}) == \
        theirs.model_dump(exclude={"location", "etag"})
    header = read_eval_log(str(tmp_path / "ours.eval"), header_only=True)
    assert header.samples is None and header.results == theirs.results
    summaries = [read_eval_log_sample_summaries(str(tmp_path / name))
                 for name in ("ours.eval", "theirs.eval")]
    assert [s.model_dump() for s in summaries[0]] == [s.model_dump() for s in summaries[1]]
    assert len(summaries[0]) == len(theirs.samples)
