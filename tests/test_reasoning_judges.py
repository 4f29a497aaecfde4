"""Issue 41, item 4: reasoning judges. Their thinking is kept in the record apart from
the reply, a verdict written inside it is never read (a contrary one is planted there),
--reasoning-effort and --thinking-budget reach the request, and reasoning tokens are
counted, costed at the model's reply-token price and shown on the leaderboard."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from openai_server import ChatServer, Reasoned

from fbi.cli import main
from fbi.thinking import split_thinking

#: A priced model (litellm's table), served by the loopback server under that name.
JUDGE = "openai/gpt-4o-mini"
REASONING_TOKENS = 40


def score_range(request: dict) -> tuple[int, int]:
    prompt = "\n".join(m["content"] for m in request["messages"])
    low, high = re.findall(r"an integer from (\d+) to (\d+)", prompt)[-1]
    return int(low), int(high)


def contrary(request: dict) -> Reasoned | str:
    """Reply with the top score; think, apart, that the answer earns the lowest (in the
    reply's own JSON shape, so a parser that read the reasoning would take it)."""
    if '"verdict"' in "\n".join(m["content"] for m in request["messages"]):
        return Reasoned(json.dumps({"explanation": "Both fine.", "verdict": "A"}),
                        'Answer B is better. {"explanation": "B", "verdict": "B"}',
                        REASONING_TOKENS)
    if "an integer from" not in json.dumps(request["messages"]):
        return "OK"  # the probe
    low, high = score_range(request)
    return Reasoned(json.dumps({"explanation": "Fine.", "score": high}),
                    f'It is wrong. {{"explanation": "wrong", "score": {low}}} Rating: '
                    f"[[{low}]]", REASONING_TOKENS)


def inline(request: dict) -> str:
    """A server without a reasoning parser: the thinking inline, in <think> tags."""
    if "an integer from" not in json.dumps(request["messages"]):
        return "OK"
    low, high = score_range(request)
    return (f'<think>Surely {{"explanation": "x", "score": {low}}}</think>\n'
            + json.dumps({"explanation": "Fine.", "score": high}))


def evaluate(tmp_path, server, name, *extra):
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "cache.sqlite")}
    return CliRunner().invoke(main, [
        "evaluate", "--judge", JUDGE, "--api-base", server.url, "--dataset", "quick",
        "--category", "entity", "--category", "spelling", "--strategy", "vanilla",
        "--strategy", "pairwise", "--output", str(tmp_path / name), *extra], env=env,
        terminal_width=120)


def records(folder):
    return [json.loads(line) for line in (folder / "judgments.jsonl").read_text().splitlines()]


def test_a_verdict_in_the_reasoning_is_never_read_and_the_thinking_is_kept(tmp_path):
    with ChatServer(contrary) as server:
        result = evaluate(tmp_path, server, "run", "--reasoning-effort", "high",
                          "--thinking-budget", "2048")
        sent = [r for r in server.requests if "an integer from" in json.dumps(r)]
    assert result.exit_code == 0, result.output
    assert all(r["reasoning_effort"] == "high" and
               r["thinking"] == {"type": "enabled", "budget_tokens": 2048} for r in sent)
    judged = records(tmp_path / "run")
    assert judged and all(j["status"] == "ok" for j in judged)
    singles = [j for j in judged if j["paradigm"] == "single"]
    assert all(j["score"] == j["score_range"][1] for j in singles)  # the reply's, not the low
    assert all(j["verdict"] == ("gold" if j["role"] == "gold-first" else "perturbed")
               for j in judged if j["paradigm"] == "pairwise")  # slot A, as replied
    assert all(j["reasoning"].startswith(("It is wrong.", "Answer B")) for j in judged)
    assert all('"score"' not in j["raw_output"] or "wrong" not in j["raw_output"]
               for j in judged)
    assert all(j["reasoning_tokens"] == REASONING_TOKENS for j in judged)
    spec = json.loads((tmp_path / "run" / "run.json").read_text())
    assert spec["parameters"]["model_args"] == {
        "reasoning_effort": "high", "thinking": {"type": "enabled", "budget_tokens": 2048}}
    assert f"({REASONING_TOKENS * len(judged):,} reasoning)" in " ".join(result.output.split())
    shown = CliRunner().invoke(main, ["show", str(tmp_path / "run"), judged[0]["call_id"]],
                               terminal_width=160)
    assert shown.exit_code == 0 and "never read for the verdict" in shown.output
    assert "It is wrong." in shown.output or "Answer B" in shown.output


def test_reasoning_tokens_are_costed_and_on_the_leaderboard(tmp_path):
    import litellm

    output_price = litellm.model_cost["gpt-4o-mini"]["output_cost_per_token"]
    with ChatServer(contrary) as server:
        assert evaluate(tmp_path, server, "run").exit_code == 0
    judged = records(tmp_path / "run")
    for judgment in judged:
        assert judgment["reasoning_cost"] == pytest.approx(REASONING_TOKENS * output_price)
        assert judgment["cost"] >= judgment["reasoning_cost"]  # part of the call's cost
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "r")], terminal_width=160)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    for row in summary["leaderboard"]:
        assert row["reasoning_tokens_per_judgment"] == REASONING_TOKENS
        assert row["reasoning_cost_per_1000"] == pytest.approx(
            1000 * REASONING_TOKENS * output_price)
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "reasoning tok / judgment" in markdown and "reasoning cost / 1k" in markdown
    assert f"${1000 * REASONING_TOKENS * output_price:.2f}" in markdown
    html = (tmp_path / "r" / "report.html").read_text()
    assert "reasoning tok / judgment" in html


def test_thinking_inline_in_think_tags_is_reasoning_too(tmp_path):
    with ChatServer(inline) as server:
        assert evaluate(tmp_path, server, "run", "--strategy", "vanilla").exit_code == 0
    singles = [j for j in records(tmp_path / "run") if j["paradigm"] == "single"]
    assert singles and all(j["score"] == j["score_range"][1] for j in singles)
    assert all(j["reasoning"].startswith("Surely") and "<think>" not in j["raw_output"]
               for j in singles)


@pytest.mark.parametrize(("reply", "expected"), [
    ("<think>a [[1]]</think> [[9]]", ("[[9]]", "a [[1]]")),
    ("  <think>\nplan\n</think>\n\nanswer", ("answer", "plan")),
    ("<think>cut off by the token limit [[1]]", ("", "cut off by the token limit [[1]]")),
    ("answer quoting <think>x</think>", ("answer quoting <think>x</think>", None)),
    ("no tags", ("no tags", None)),
    # the first close ends the thinking (vLLM's parsers): a close quoted later stays reply
    ("<think>t</think>r </think> s", ("r </think> s", "t")),
])
def test_split_thinking(reply, expected):
    assert split_thinking(reply) == expected


def test_reasoning_options_conflicting_with_a_model_arg_are_refused(tmp_path):
    result = CliRunner().invoke(main, [
        "evaluate", "--judge", JUDGE, "--api-base", "http://127.0.0.1:9/v1", "--output",
        str(tmp_path / "x"), "--reasoning-effort", "low", "--model-arg",
        "reasoning_effort=high"])
    assert result.exit_code == 2 and "give one" in result.output
    assert not (tmp_path / "x").exists()


def test_the_litellm_path_keeps_reasoning_apart_too(tmp_path):
    """A provider litellm serves (DeepSeek's protocol, reasoning_content): same rule."""
    with ChatServer(contrary) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "deepseek/deepseek-reasoner", "--api-base", server.url,
            "--dataset", "quick", "--category", "entity", "--strategy", "vanilla",
            "--output", str(tmp_path / "run")],
            env={"DEEPSEEK_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")})
    assert result.exit_code == 0, result.output
    judged = records(tmp_path / "run")
    assert judged and all(j["score"] == j["score_range"][1] for j in judged)
    assert all(j["reasoning"].startswith("It is wrong.") for j in judged)
    assert all(j["reasoning_tokens"] == REASONING_TOKENS for j in judged)
