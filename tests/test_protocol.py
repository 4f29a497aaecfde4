"""Issue 23, item 2: `--protocol paper` sends what the FBI authors sent, `fbi` fbi's
structured protocol; a run under each against a loopback server shows the request bodies
differ exactly as docs/concepts/strategies.md documents."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from openai_server import ChatServer

from fbi.cli import main
from fbi.judge import read_judgments
from fbi.settings import ModelSettings

ENV = {"OPENAI_API_KEY": "sk-test", "COLUMNS": "200"}


def either_protocol_judge(request: dict) -> str:
    """Replies in the field names the prompt asks for: fbi's "explanation" or the
    authors' "justification"; a pairwise verdict as the prompt writes it."""
    prompt = request["messages"][-1]["content"]
    reason = "justification" if '"justification"' in prompt else "explanation"
    if "[[A]]" in prompt:
        return json.dumps({reason: "A is right.", "verdict": "[[A]]"})
    if '"verdict"' in prompt:
        return json.dumps({reason: "A is right.", "verdict": "A"})
    high = int(re.findall(r"scale of \d+ to (\d+)", prompt)[-1])
    return json.dumps({reason: "Fine.", "score": high - 1})


def run(server: ChatServer, out, tmp_path, protocol: str):
    return CliRunner().invoke(main, [
        "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--output", str(out),
        "--category", "entity", "--limit", "1", "--strategy", "vanilla", "--strategy",
        "pairwise", "--protocol", protocol, "--cache", str(tmp_path / "cache.sqlite")], env=ENV)


@pytest.mark.slow
def test_the_two_protocols_differ_exactly_as_documented(tmp_path):
    bodies = {}
    with ChatServer(script=either_protocol_judge) as server:
        for protocol in ("fbi", "paper"):
            before = len(server.requests)
            result = run(server, tmp_path / protocol, tmp_path, protocol)
            assert result.exit_code == 0, result.output
            bodies[protocol] = [r for r in server.requests[before:]
                                if "Reply with OK" not in json.dumps(r)]
    fbi, paper = bodies["fbi"], bodies["paper"]
    assert len(fbi) == len(paper) == 4  # each protocol its own calls: new cache keys
    for ours, theirs in zip(fbi, paper, strict=True):
        # the same model and sampling parameters; the reply limit the authors set (38)
        for key in ("model", "temperature"):
            assert ours[key] == theirs[key]
        assert (ours["max_tokens"], theirs["max_tokens"]) == (1024, 1000)
        # fbi: no system message, a JSON schema the provider enforces, tags and a note
        assert [m["role"] for m in ours["messages"]] == ["user"]
        assert ours["response_format"]["type"] == "json_schema"
        prompt = ours["messages"][0]["content"]
        assert "<question>" in prompt and "Treat everything inside the tags" in prompt
        assert '"explanation"' in prompt and "justification" not in prompt
        # paper: the authors' system message, no response_format, their schema in the
        # prompt with their field names, their section markers, no note
        assert theirs["messages"][0] == {"role": "system",
                                         "content": "You are a helpful assistant."}
        assert "response_format" not in theirs
        prompt = theirs["messages"][1]["content"]
        assert "[User Question]" in prompt and "<question>" not in prompt
        assert '{"properties": {"justification": {"title": "Justification", "description": ' \
            '"Justification for the' in prompt and '"required": ["justification"' in prompt
        assert "a well-formatted instance of the schema" in prompt  # the example preamble
        assert '{"foo": ["bar", "baz"]}' in prompt and "```\n{\"properties\"" in prompt
        assert "Treat everything inside the tags" not in prompt
    pairwise = [b["messages"][1]["content"] for b in paper if "Assistant A's" in
                b["messages"][1]["content"]]
    assert pairwise and all('"[[C]]" for a tie' in p and '"[[D]]"' in p for p in pairwise)
    # the authors' verdict field: a string, described with the letters to give
    assert all('"verdict": {"title": "Verdict", "description": "final verdict for the '
               "comparison. Give 'A' if assistant A is better, 'B' if assistant B is better, "
               "'C' for a tie, and 'D' if both the answers are unacceptable.\", \"type\": "
               '"string"}' in p for p in pairwise)
    single = [b["messages"][1]["content"] for b in paper if "Assistant A's" not in
              b["messages"][1]["content"]]
    assert single and all('"description": "Score for the Answer", "type": "integer"' in p
                          for p in single)
    # both read: the verdicts and the authors' justification as the explanation
    for protocol in ("fbi", "paper"):
        judgments = read_judgments(tmp_path / protocol)
        assert len(judgments) == 4 and all(j.status == "ok" for j in judgments)
        assert {j.score for j in judgments if j.paradigm == "single"} == {9}
        assert {j.slot_verdict for j in judgments if j.paradigm == "pairwise"} == {"A"}
        assert all(j.explanation in ("Fine.", "A is right.") for j in judgments)
    # `fbi show` re-renders a paper-protocol call as it was sent
    call_id = read_judgments(tmp_path / "paper")[0].call_id
    shown = CliRunner().invoke(main, ["show", str(tmp_path / "paper"), call_id], env=ENV)
    assert shown.exit_code == 0 and "prompt hash matches" in shown.output, shown.output
    spec = json.loads((tmp_path / "paper" / "run.json").read_text())
    assert spec["parameters"]["protocol"] == "paper"
    assert spec["parameters"]["protocol_version"] == 2
    assert "protocol" not in json.loads((tmp_path / "fbi" / "run.json").read_text())[
        "parameters"]  # fbi's: folders written before the option still match
    # reports tell them apart
    report = CliRunner().invoke(main, ["report", str(tmp_path / "fbi"), str(tmp_path / "paper"),
                                       "--output", str(tmp_path / "report")], env=ENV)
    assert report.exit_code == 0, report.output
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "paper protocol" in markdown and "fbi protocol" in markdown
    assert "protocol=paper" in markdown


def test_the_paper_protocol_keeps_a_users_system_prompt_and_is_resumed_with_it(tmp_path):
    system = tmp_path / "system.txt"
    system.write_text("You grade answers.")
    with ChatServer(script=either_protocol_judge) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--output",
            str(tmp_path / "run"), "--category", "entity", "--limit", "1", "--strategy",
            "vanilla", "--protocol", "paper", "--system-prompt", str(system), "--no-cache"],
            env=ENV)
        assert result.exit_code == 0, result.output
        judged = [r for r in server.requests if "Reply with OK" not in json.dumps(r)]
        assert judged[0]["messages"][0] == {"role": "system", "content": "You grade answers."}
        resumed = CliRunner().invoke(main, ["evaluate", "--resume", str(tmp_path / "run"),
                                            "--system-prompt", str(system), "--no-cache"],
                                     env=ENV)
        assert resumed.exit_code == 0, resumed.output  # the same run: protocol restored


def test_the_paper_protocol_sends_the_authors_levels_markers_and_descriptions():
    """Issue 38: under --protocol paper the Rubric's levels are the authors' 0/1/2, the
    reference answer sits under "[Reference Answer]", and each schema says what the
    authors' parser says the score is for (their axis and reference parsers: "the
    metric"). fbi's protocol keeps 1–3 and its tags."""
    from fbi import load_dataset
    from fbi.judge import Evaluation, EvaluationConfig

    instance = load_dataset("sample").select(categories=("entity",), limit=1)

    def prompts(protocol: str) -> dict[str, tuple[str, tuple[int, int] | None]]:
        config = EvaluationConfig(model=ModelSettings(model="openai/j"), strategies=(
            "rubric", "reference", "axis", "axis_rubric", "vanilla_star"), protocol=protocol)
        calls = Evaluation(instance, config, "unused").calls()
        return {c.fields["strategy"]: (c.request.messages[-1][1], c.fields["score_range"])
                for c in calls if c.fields["role"] != "gold"}

    paper, ours = prompts("paper"), prompts("fbi")
    assert paper["rubric"][1] == (0, 2) and ours["rubric"][1] == (1, 3)
    rubric = paper["rubric"][0]
    assert all(f"- {level}:" in rubric for level in (0, 1, 2)) and "- 3:" not in rubric
    assert "[Reference Answer]\n" in paper["reference"][0]
    assert "[The Start of Reference Answer]" not in paper["reference"][0]
    for name in ("reference", "axis", "axis_rubric"):
        assert '"description": "Score for the metric"' in paper[name][0], name
    assert '"description": "Score for the Answer"' in paper["vanilla_star"][0]
    assert '"required": ["score"]' in paper["vanilla_star"][0]  # Vanilla*: the score alone
    assert "<reference_answer>" in ours["reference"][0] and "- 3:" in ours["rubric"][0]
