"""Trajectories from outside, read or refused (issue 63): every reader bounds nesting,
checks each field's type before using it and reads JSON exactly (no NaN, infinity or
lone surrogate in text or in a call's arguments), in every layout fbi reads; a judge
that names a step past the trajectory's end gave no readable verdict; a process reward
model's step entry must be a probability distribution."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner
from test_trajectories import anthropic_booking, openai_booking

from fbi.cli import main
from fbi.providers._reward import step_rewards_of
from fbi.providers._wire import BadReply


def tau_bench() -> dict:
    record = openai_booking()
    return {"task_id": 7, "reward": 1.0, "info": {"task": {
        "instruction": record["messages"][1]["content"]}}, "traj": record["messages"],
        "trial": 0}


LAYOUTS = {"openai": openai_booking, "anthropic": anthropic_booking, "tau": tau_bench}


def validate(tmp_path, record_or_text, suffix=".jsonl") -> tuple[int, str]:
    path = tmp_path / f"t{suffix}"
    path.write_text(record_or_text if isinstance(record_or_text, str)
                    else json.dumps(record_or_text) + "\n")
    result = CliRunner().invoke(main, ["trajectories", "validate", str(path)])
    return result.exit_code, " ".join(result.output.split())


def messages_of(record: dict) -> list:
    return record.get("messages", record.get("traj"))


# each: (layout, change, what the message says)
SHAPES = [
    ("openai", lambda r: r.update(messages=5), "messages is the number 5"),
    ("openai", lambda r: r.update(tools="book_flight"), "tools is the text"),
    ("openai", lambda r: r.update(tools=[7]), "a tool definition is the number 7"),
    ("openai", lambda r: r.update(side_effects="book_flight"), "side_effects is the text"),
    ("openai", lambda r: r.update(requires_confirmation="yes"), "requires_confirmation"),
    ("openai", lambda r: r.update(domain=["x"]), "domain is a list"),
    ("openai", lambda r: messages_of(r).insert(2, "hello"), "message 3 is the text"),
    ("openai", lambda r: messages_of(r)[2].update(tool_calls={"id": "s1"}),
     "tool_calls is an object"),
    ("openai", lambda r: messages_of(r)[2].update(tool_calls=["s1"]),
     "a tool call is the text"),
    ("openai", lambda r: messages_of(r)[2]["tool_calls"][0]["function"].update(name=3),
     "a tool call's name is the number 3"),
    ("openai", lambda r: messages_of(r)[2]["tool_calls"][0]["function"].update(
        arguments='{"date": NaN}'), "the number NaN"),
    ("openai", lambda r: messages_of(r)[2]["tool_calls"][0]["function"].update(
        arguments='{"price": Infinity}'), "the number Infinity"),
    ("openai", lambda r: messages_of(r)[2]["tool_calls"][0]["function"].update(
        arguments='{"name": "\\ud800"}'), "lone surrogate"),
    ("openai", lambda r: messages_of(r)[2]["tool_calls"][0]["function"].update(
        arguments="[1, 2]"), "the arguments are a list"),
    ("openai", lambda r: messages_of(r)[3].update(tool_call_id=["s1"]),
     "a call id is a list"),
    ("openai", lambda r: messages_of(r)[3].update(name={"n": 1}), "the tool's name is an"),
    ("anthropic", lambda r: messages_of(r)[1]["content"][0].update(input=[1]),
     "the arguments are a list"),
    ("anthropic", lambda r: messages_of(r)[2]["content"][0].update(is_error="no"),
     "is_error is the text"),
    ("anthropic", lambda r: messages_of(r)[1]["content"][0].update(name=None, id=True),
     "a call id is the boolean true"),
    ("anthropic", lambda r: messages_of(r)[1]["content"].append(4),
     "a content block of type null"),
    ("tau", lambda r: r["info"].update(task=["instruction"]), "info.task is a list"),
    ("tau", lambda r: r.update(info="task"), "info is the text"),
    ("tau", lambda r: r["info"]["task"].update(instruction=42), "the number 42"),
    ("tau", lambda r: r.update(task_id=[7]), "its task_id is a list"),
    ("tau", lambda r: r.update(traj={"role": "user"}), "messages is an object"),
]


@pytest.mark.parametrize(("layout", "change", "message"), SHAPES)
def test_a_field_of_the_wrong_type_is_one_message(tmp_path, layout, change, message):
    record = copy.deepcopy(LAYOUTS[layout]())
    change(record)
    code, said = validate(tmp_path, record)
    assert code == 2 and message in said, said
    assert "Traceback" not in said and "line 1" in said


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_nesting_past_the_bound_is_refused_before_parsing(tmp_path, layout):
    record = LAYOUTS[layout]()
    deep = "[" * 100_000 + "]" * 100_000
    text = json.dumps(record)[:-1] + f', "extra": {deep}}}\n'
    code, said = validate(tmp_path, text)
    assert code == 2 and "nested more than 64 levels" in said, said
    code, said = validate(tmp_path, "[" + json.dumps(record) + ", " + deep + "]", ".json")
    assert code == 2 and "nested more than 64 levels" in said, said


@pytest.mark.parametrize("text", [
    '{"id": "t", "task": "x", "steps": [{"role": "user", "text": "\\udc00"}]}',
    '{"id": "t", "task": NaN, "steps": []}',
    '{"id": "t", "task": "x", "steps": [{"role": "assistant", "text": "", "calls": '
    '[{"id": "c", "name": "f", "arguments": {"x": -Infinity}}]}]}',
    '{"id": 123456789012345678901234567890, "task": "x", "steps": []}',
])
def test_fbi_s_own_layout_is_read_exactly(tmp_path, text):
    code, said = validate(tmp_path, text + "\n")
    assert code == 2 and "line 1" in said and "Traceback" not in said, said


def test_tau_bench_task_id_zero_and_trials_are_ids(tmp_path):
    records = [{**tau_bench(), "task_id": 0, "trial": t} for t in (0, 1)]
    path = tmp_path / "tau.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    from fbi.trajectories import read_trajectories

    assert [t.id for t in read_trajectories(path)] == ["0/trial-0", "0/trial-1"]


def test_a_prm_step_entry_must_be_a_distribution():
    """Label probabilities [P(wrong), P(right)] per step: each must be in [0, 1] and sum
    to 1 within 1e-3; a NaN anywhere in the entry is refused, not only in the label read."""
    assert step_rewards_of([[0.2, 0.8], [0.9, 0.1]], 2, 1) == [0.8, 0.1]
    for entry in ([0.5, 0.9], [float("nan"), 0.7], [-0.2, 1.2], [0.3, 0.7, 0.5], [True, 0.0]):
        with pytest.raises(BadReply, match="probability distribution"):
            step_rewards_of([[0.2, 0.8], entry], 2, 1)


def test_a_step_named_past_the_trajectory_is_unreadable():
    """agent_step reads the first wrong step; a trajectory of N steps has no step N + 1,
    so a reply naming one gave no verdict (it is never counted as "late")."""
    from fbi.judge import reparse
    from fbi.records import Instance, Judgment
    from fbi.trajectories import render, trajectory_of

    trajectory = trajectory_of(openai_booking())
    text = render(trajectory)
    steps = len(trajectory.steps)
    instance = Instance(id="x", ability="agent", category="trajectory/wrong-tool",
                        instruction="Book it.",
                        gold_answer=text, perturbed_answer=text.replace("TP100", "TP200"))
    base = {"call_id": "x|agent_step|perturbed", "prompt_hash": "h", "status": "ok",
            "instance_id": "x", "ability": instance.ability, "category": instance.category,
            "strategy": "agent_step", "strategy_version": "1", "paradigm": "step",
            "role": "perturbed", "judge": "openai/j", "score_range": (0, 99)}
    for named, status in ((steps, "ok"), (steps + 1, "unparseable"), (99, "unparseable"),
                          (0, "ok")):
        judgment = Judgment(**base, raw_output=json.dumps(
            {"explanation": "checked", "score": named}))
        again = reparse(judgment, instance)
        assert again.status == status, (named, again.reason)
        if status == "unparseable":
            assert f"names step {named} of a trajectory of {steps} steps" in again.reason
