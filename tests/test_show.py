"""`fbi show RUN CALL_ID` and the --dry-run examples (issue 14, item 5)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from openai_server import ChatServer

from fbi.cli import main
from fbi.judge import show_call


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("show")
    system = folder / "system.txt"
    system.write_text("Grade strictly.", encoding="utf-8")
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(folder / "cache.sqlite")}
    common = ["evaluate", "--judge", "openai/judge", "--category", "entity", "--limit", "1"]
    with ChatServer() as server:
        plain = CliRunner().invoke(main, [
            *common, "--api-base", server.url, "--output", str(folder / "plain"),
            "--strategy", "vanilla", "--strategy", "pairwise_axis_rules", "--strategy",
            "axis_rubric"], env=env)
        assert plain.exit_code == 0, plain.output
        shaped = CliRunner().invoke(main, [
            *common, "--api-base", server.url, "--output", str(folder / "shaped"),
            "--strategy", "rubric", "--score-range", "1-5", "--system-prompt", str(system),
            "--label", "strict"],
            env=env)
        assert shaped.exit_code == 0, shaped.output
    return folder


def call_ids(run) -> list[str]:
    return [json.loads(line)["call_id"]
            for line in (run / "judgments.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_every_stored_call_is_re_rendered_to_its_prompt_hash(runs):
    ids = call_ids(runs / "plain")
    assert len(ids) == 6
    for call_id in ids:
        shown = show_call(runs / "plain", call_id)
        assert shown.hash_matches, (call_id, shown.note)
        assert shown.judgment.call_id == call_id


def test_a_changed_score_range_and_a_system_prompt_are_reproduced(runs):
    (call_id, *_) = call_ids(runs / "shaped")
    without = show_call(runs / "shaped", call_id)
    assert not without.hash_matches and "--system-prompt" in without.note
    shown = show_call(runs / "shaped", call_id, system_prompt="Grade strictly.")
    assert shown.hash_matches
    assert shown.messages[0] == ("system", "Grade strictly.")
    assert "an integer from 1 to 5" in shown.messages[1][1]


def test_the_command_prints_messages_reply_and_verdict(runs):
    call_id = next(i for i in call_ids(runs / "plain") if "pairwise" in i)
    result = CliRunner().invoke(main, ["show", str(runs / "plain"), call_id],
                                env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "user message" in result.output and "prompt hash matches" in result.output
    assert "raw reply" in result.output and "verdict" in result.output


def test_the_call_is_named_with_the_runs_label_and_strategy(runs):
    """Issue 26: wherever fbi names a judge it uses the label, model beside it."""
    (call_id, *_) = call_ids(runs / "shaped")
    result = CliRunner().invoke(main, ["show", str(runs / "shaped"), call_id,
                                       "--system-prompt", str(runs / "system.txt")],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert " ".join(result.output.split()).startswith(
        f"{call_id} of {runs / 'shaped'}: judge strict (openai/judge), strategy Rubric")


def test_an_unknown_call_is_a_message_with_suggestions(runs):
    (call_id, *_) = call_ids(runs / "plain")
    result = CliRunner().invoke(main, ["show", str(runs / "plain"), call_id[:-1]])
    assert result.exit_code == 2 and "Did you mean" in result.output


def test_dry_run_shows_one_rendered_prompt_per_strategy_when_asked(tmp_path):
    """Issue 26: prompts only with --show-prompts, and after the cost, not 436 lines
    before it."""
    def dry_run(*extra):
        return CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--api-base", "http://127.0.0.1:9/v1",
            "--dry-run", "--strategy", "vanilla", "--strategy", "pairwise", "--output",
            str(tmp_path / "run"), *extra], env={"COLUMNS": "120", "OPENAI_API_KEY": "x",
                                                 "FBI_CACHE": str(tmp_path / "c.sqlite")})

    plain = dry_run()
    assert plain.exit_code == 0, plain.output
    assert "user message of" not in plain.output and "calls planned" in plain.output
    assert "--show-prompts prints" in plain.output
    assert len(plain.output.splitlines()) < 12
    result = dry_run("--show-prompts")
    assert result.exit_code == 0, result.output
    assert result.output.index("calls planned") < result.output.index("user message of")
    assert result.output.count("user message of") == 2
    assert "vanilla: user message of" in result.output
    assert "pairwise: user message of" in result.output
    assert "<answer_a>" in result.output and "calls planned" in result.output
    assert not (tmp_path / "run").exists()


def test_a_dry_run_needs_no_api_key_and_says_what_the_run_will(tmp_path):
    """Issue 26: estimating the cost needs no key; the real run still refuses without one,
    with the same message."""
    env = {"COLUMNS": "120", "OPENAI_API_KEY": None, "FBI_API_KEY": None,
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    args = ["evaluate", "--judge", "openai/gpt-4o", "--strategy", "vanilla", "--output",
            str(tmp_path / "run")]
    dry = CliRunner().invoke(main, [*args, "--dry-run"], env=env)
    assert dry.exit_code == 0, dry.output
    assert "cost $" in dry.output  # gpt-4o is priced in litellm's table
    assert "before the real run: openai/gpt-4o: no API key for openai" in \
        " ".join(dry.output.split())
    real = CliRunner().invoke(main, args, env=env)
    assert real.exit_code == 2 and "no API key for openai" in real.output
    unknown = CliRunner().invoke(main, ["evaluate", "--judge", "nonsense-model", "--dry-run",
                                        "--output", str(tmp_path / "run2")], env=env)
    assert unknown.exit_code == 2 and "unknown model" in unknown.output
