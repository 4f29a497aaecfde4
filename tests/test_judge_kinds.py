"""Issue 52: judge kinds are objects chosen by the model string. The chat judge and the
reward model are two kinds; a stored judgment is read again by its own judge's kind; and
a new kind is one file (docs/examples/yes_no_judge.py) that judges, is refused what it
cannot be asked, and reports like fbi's own."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import load_example
from openai_server import ChatServer

from fbi import load_dataset
from fbi.cli import main
from fbi.judge import ChatJudge, RewardJudge, judge_kind, reparse
from fbi.records import Judgment


@pytest.fixture
def yes_no():
    """The example kind, registered for one test and taken out after."""
    from fbi.judge import JUDGE_KINDS

    module = load_example("yes_no_judge")
    yield module
    JUDGE_KINDS.remove(module.YesNoJudge.name)


def test_the_model_string_chooses_the_kind():
    assert isinstance(judge_kind("reward/rm"), RewardJudge)
    assert isinstance(judge_kind("hf-reward/OpenAssistant/reward-model"), RewardJudge)
    for model in ("openai/gpt-4o", "local/smollm2", "gpt-4-turbo", "reward"):
        assert isinstance(judge_kind(model), ChatJudge), model


def test_a_stored_judgment_is_read_again_by_its_own_judge_s_kind():
    """The same stored reply is a reward when a reward model gave it and no verdict when
    a chat judge did: the judge each record names chooses the parser, not its fields."""
    fields = dict(call_id="i|reward|gold", instance_id="i", ability="factual",
                  category="entity", strategy="reward", strategy_version="1",
                  paradigm="single", role="gold", score_range=None, status="ok",
                  raw_output="1.75", parser_version="0", prompt_hash="0" * 64)
    reward = reparse(Judgment(judge="reward/rm", **fields), None)
    assert reward.status == "ok" and reward.score == 1.75
    chat = reparse(Judgment(judge="openai/gpt-4o", **{**fields, "strategy": "vanilla",
                                                     "score_range": (1, 10)}), None)
    assert chat.status == "unparseable" and chat.score is None  # 1.75 is no 1–10 score
    chat = reparse(chat.model_copy(update={"raw_output": '{"score": 7}'}), None)
    assert chat.status == "ok" and chat.score == 7


def grader(request: dict) -> str:
    """A yes/no grader that knows the sample's gold answers: yes to those, no else."""
    golds = {i.gold_answer for i in load_dataset("sample")}
    text = request["messages"][-1]["content"]
    answer = text.split("Answer:\n", 1)[1].rsplit("\n\nIs the answer", 1)[0]
    return "Yes." if answer in golds else "no"


def test_a_new_judge_kind_is_one_file_and_judges_like_fbi_s_own(tmp_path, yes_no):
    assert isinstance(judge_kind("openai/grader-yesno"), yes_no.YesNoJudge)
    env = {"FBI_CACHE": str(tmp_path / "c.sqlite")}
    with ChatServer(script=grader) as server:
        base = ["evaluate", "--judge", "openai/grader-yesno", "--api-base", server.url,
                "--category", "entity"]
        refused = CliRunner().invoke(main, [*base, "--strategy", "pairwise", "--output",
                                            str(tmp_path / "no")], env=env)
        assert refused.exit_code == 2 and "is a yes-no judge" in refused.output
        assert "pairwise cannot be asked" in refused.output
        refused = CliRunner().invoke(main, [*base, "--repair", "1", "--output",
                                            str(tmp_path / "no")], env=env)
        assert refused.exit_code == 2 and "drop --repair" in refused.output
        done = CliRunner().invoke(main, [*base, "--output", str(tmp_path / "run")], env=env)
        assert done.exit_code == 0, done.output
    judged = [json.loads(line) for line in (tmp_path / "run" / "judgments.jsonl").open()]
    entity = (tmp_path / "run" / "instances.jsonl").read_text().splitlines()
    assert len(judged) == 2 * len(entity)  # each instance's gold and perturbed answers
    assert {(j["role"], j["score"], j["score_range"][1]) for j in judged} == {
        ("gold", 1, 1), ("perturbed", 0, 1)}
    spec = json.loads((tmp_path / "run" / "run.json").read_text())
    assert spec["prompts"]["vanilla"]["score_range"] == [0, 1]  # what was asked
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "r")], terminal_width=120)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    (overall,) = [r for r in summary["rates"] if r["level"] == "overall"]
    assert overall["rate"] == 0.0 and overall["n"] == len(entity)  # every error caught
