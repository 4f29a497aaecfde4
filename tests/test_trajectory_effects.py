"""Side effects and confirmations from what each source declares (issue 66): MCP's tool
annotations, a record's side_effects, τ-bench's write tools, a tool's name; a
confirmation asked by a question or through a tool that asks the user, in every layout
fbi reads — trajectories written here in the world's shapes, not fbi's sample."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from fbi.errors import FbiWarning, InputError
from fbi.perturb import perturb_trajectory
from fbi.perturb.rules import Declined
from fbi.trajectories import (
    ToolOverrides,
    Trajectory,
    changed_step,
    confirmations,
    read_trajectories,
    render,
    task_text,
    trajectory_of,
)

UNCONFIRMED = "trajectory/unconfirmed-action"


def _call(ident: str, name: str, **arguments) -> dict:
    return {"id": ident, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def _openai_tool(name: str, description: str, **extra) -> dict:
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object"}}, **extra}


def _tools(trajectory: Trajectory) -> dict[str, tuple[bool, str]]:
    return {t.name: (t.side_effects, t.known_by) for t in trajectory.tools}


# ------------------------------------------------------------------ side effects


def test_side_effects_come_from_mcp_annotations_in_each_definition_shape():
    record = {"id": "mcp", "messages": [{"role": "user", "content": "Tidy my notes."},
                                        {"role": "assistant", "content": "Nothing to do."}],
              "tools": [
                  # MCP's own shape: inputSchema and annotations
                  {"name": "purge_notes", "description": "Tidies notes.",
                   "inputSchema": {"type": "object"},
                   "annotations": {"readOnlyHint": False, "destructiveHint": True}},
                  # a read-only hint beats a verb that would say otherwise
                  {"name": "update_index", "description": "Reports the index.",
                   "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
                  # annotations beside an OpenAI function definition
                  _openai_tool("notes_tool", "Does things.",
                               annotations={"destructiveHint": True}),
                  # hints that say nothing of side effects: the name decides
                  {"name": "delete_note", "description": "",
                   "annotations": {"idempotentHint": True}},
                  {"name": "frobnicate", "description": "Frobnicates."}]}
    assert _tools(trajectory_of(record)) == {
        "purge_notes": (True, "mcp"), "update_index": (False, "mcp"),
        "notes_tool": (True, "mcp"), "delete_note": (True, "inferred"),
        "frobnicate": (False, "unknown")}


def test_side_effects_from_a_record_list_a_definition_flag_and_a_name():
    record = {"id": "r", "side_effects": ["file_it"],
              "messages": [{"role": "user", "content": "File it."},
                           {"role": "assistant", "content": "Filed."}],
              "tools": [_openai_tool("file_it", "Files."), _openai_tool("send_mail", "")]}
    # the record names what changes the world: the rest, whatever their verb, do not
    assert _tools(trajectory_of(record)) == {"file_it": (True, "declared"),
                                             "send_mail": (False, "declared")}
    anthropic = {"id": "a", "messages": [{"role": "user", "content": "Go."},
                                         {"role": "assistant", "content": "Gone."}],
                 "tools": [
        {"name": "bookTable", "description": "Reserves a table.",
         "input_schema": {"type": "object"}},
        {"name": "lookup", "description": "x", "input_schema": {}, "side_effects": True},
        {"name": "add", "description": "Add two numbers.", "input_schema": {}}]}
    assert _tools(trajectory_of(anthropic)) == {
        "bookTable": (True, "inferred"), "lookup": (True, "declared"),
        "add": (False, "unknown")}  # a calculator's add is not add_to_cart


def tau_run(task_id, trial, traj, reward=1.0) -> dict:
    return {"task_id": task_id, "trial": trial, "reward": reward,
            "info": {"task": {"instruction": "Cancel order #W1 for me."}}, "traj": traj}


TAU_TRAJ = [
    {"role": "system", "content": "policy"},
    {"role": "user", "content": "Please cancel order #W1, I no longer need it."},
    {"role": "assistant", "content": None,
     "tool_calls": [_call("c1", "get_order_details", order_id="#W1")]},
    {"role": "tool", "tool_call_id": "c1", "name": "get_order_details",
     "content": '{"status": "pending"}'},
    {"role": "assistant", "content": "Order #W1 is pending. I will cancel it because it "
                                     "is no longer needed. Do you confirm (yes/no)?"},
    {"role": "user", "content": "yes"},
    {"role": "assistant", "content": None, "tool_calls": [
        _call("c2", "cancel_pending_order", order_id="#W1", reason="no longer needed")]},
    {"role": "tool", "tool_call_id": "c2", "name": "cancel_pending_order",
     "content": '{"status": "cancelled"}'},
    {"role": "assistant", "content": "Order #W1 is cancelled."}]


def test_tau_bench_results_take_its_write_tools_and_its_confirmation_policy(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps([tau_run(0, 0, TAU_TRAJ), tau_run(0, 1, TAU_TRAJ),
                                tau_run(3, 0, [], reward=0.0)]), encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = read_trajectories(path)
    # several trials of one task are several trajectories; task 0 is an id
    assert [t.id for t in found] == ["0/trial-0", "0/trial-1"]
    # a run that raised is left out, said so
    assert [w for w in caught if issubclass(w.category, FbiWarning)
            and "1 τ-bench run(s)" in str(w.message) and "item 3" in str(w.message)]
    run = found[0]
    assert _tools(run) == {"get_order_details": (False, "tau-bench"),
                           "cancel_pending_order": (True, "tau-bench")}
    assert run.requires_confirmation
    # the judge is not told of tools the results never defined
    assert "cancel_pending_order:" not in task_text(run)
    # (τ-bench's task is its instruction: the user's first turn is a step)
    assert [(c.kind, c.first, c.last) for c in confirmations(run)] == [("question", 3, 4)]
    edit = perturb_trajectory(UNCONFIRMED, run, 0)
    assert [s.role for s in edit.trajectory.steps] == ["user", "assistant", "tool",
                                                       "assistant", "tool", "assistant"]
    assert not confirmations(edit.trajectory)
    assert changed_step(render(run), render(edit.trajectory)) == edit.step == 4


# ------------------------------------------------------------------ confirmations


def _checked(trajectory: Trajectory, removed: list[int]) -> None:
    """The rule's edit: the confirmation's steps (0-based ``removed``) gone, the action
    still there, the edited trajectory well formed, the step it names the one changed."""
    edit = perturb_trajectory(UNCONFIRMED, trajectory, 0)
    expected = [s for n, s in enumerate(trajectory.steps) if n not in removed]
    assert [(s.role, s.text) for s in edit.trajectory.steps] == \
        [(s.role, s.text) for s in expected]
    Trajectory.model_validate(edit.trajectory.model_dump())  # calls and results pair
    assert not confirmations(edit.trajectory)
    assert changed_step(render(trajectory), render(edit.trajectory)) == edit.step


def test_an_ask_user_tool_call_is_a_confirmation_in_the_openai_layout():
    record = {"id": "hitl", "messages": [
        {"role": "user", "content": "Cancel my 9am meeting."},
        {"role": "assistant", "content": "",
         "tool_calls": [_call("k1", "list_events", day="today")]},
        {"role": "tool", "tool_call_id": "k1", "content": "9:00 standup (id 7)"},
        {"role": "assistant", "content": None,
         "tool_calls": [_call("k2", "ask_user", question="Cancel the 9:00 standup?")]},
        {"role": "tool", "tool_call_id": "k2", "content": "Yes, cancel it."},
        {"role": "assistant", "content": None,
         "tool_calls": [_call("k3", "cancel_event", id=7)]},
        {"role": "tool", "tool_call_id": "k3", "content": "cancelled"},
        {"role": "assistant", "content": "The standup is cancelled."}],
        "tools": [_openai_tool("list_events", "Lists events."),
                  _openai_tool("ask_user", "Ask the user a question and wait for the "
                                           "answer."),
                  _openai_tool("cancel_event", "Cancels an event.")]}
    trajectory = trajectory_of(record)
    assert [t.name for t in trajectory.tools if t.asks_user] == ["ask_user"]
    assert [(c.kind, c.first, c.last) for c in confirmations(trajectory)] == \
        [("tool", 2, 3)]
    _checked(trajectory, [2, 3])


def test_an_approval_tool_in_anthropic_blocks_keeps_the_assistant_s_words():
    record = {"id": "anthropic-hitl", "messages": [
        {"role": "user", "content": "Transfer $40 to Sam."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "I need your approval first."},
            {"type": "tool_use", "id": "u1", "name": "request_approval",
             "input": {"action": "transfer $40 to Sam"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1",
                                      "content": "approved"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "u2", "name": "transfer_money",
             "input": {"to": "Sam", "amount": 40}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u2",
                                      "content": "done"}]},
        {"role": "assistant", "content": "Sent $40 to Sam."}],
        "tools": [{"name": "request_approval", "description": "Gets the user's approval.",
                   "input_schema": {}},
                  {"name": "transfer_money", "description": "Moves money.",
                   "input_schema": {}}]}
    trajectory = trajectory_of(record)
    edit = perturb_trajectory(UNCONFIRMED, trajectory, 0)
    first = edit.trajectory.steps[0]
    assert first.text == "I need your approval first." and not first.calls
    assert [s.role for s in edit.trajectory.steps] == ["assistant", "assistant", "tool",
                                                       "assistant"]
    Trajectory.model_validate(edit.trajectory.model_dump())
    assert changed_step(render(trajectory), render(edit.trajectory)) == edit.step == 1


def test_the_confirmation_removed_is_the_last_before_the_action_in_fbi_s_layout():
    steps = [
        {"role": "assistant", "text": "Which file is it, notes.txt?"},
        {"role": "user", "text": "notes.txt, please."},
        {"role": "assistant", "text": "Overwriting notes.txt cannot be undone. Go ahead?"},
        {"role": "user", "text": "Go ahead."},
        {"role": "assistant", "calls": [{"id": "w", "name": "write_file",
                                         "arguments": {"path": "notes.txt"}}]},
        {"role": "tool", "call_id": "w", "text": "written"},
        {"role": "assistant", "text": "Done."}]
    trajectory = trajectory_of({"id": "own", "task": "Clear my notes file.", "steps": steps,
                                "tools": [{"name": "write_file", "description": ""}]})
    assert _tools(trajectory) == {"write_file": (True, "inferred")}
    # the first exchange asks for information, and its reply is no yes: no confirmation
    assert [(c.first, c.last) for c in confirmations(trajectory)] == [(2, 3)]
    _checked(trajectory, [2, 3])


def test_the_rule_says_why_it_declines():
    plain = trajectory_of({"id": "p", "messages": [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a", "add", a=2, b=2)]},
        {"role": "tool", "tool_call_id": "a", "content": "4"},
        {"role": "assistant", "content": "4."}], "tools": [_openai_tool("add", "")]})
    with pytest.raises(Declined, match="no tool changes the world"):
        perturb_trajectory(UNCONFIRMED, plain, 0)
    unasked = trajectory_of({"id": "u", "messages": [
        {"role": "user", "content": "Delete old.txt."},
        {"role": "assistant", "content": "What is the file's full path?"},
        {"role": "user", "content": "/tmp/old.txt"},
        {"role": "assistant", "content": None,
         "tool_calls": [_call("d", "delete_file", path="/tmp/old.txt")]},
        {"role": "tool", "tool_call_id": "d", "content": "deleted"},
        {"role": "assistant", "content": "Deleted."}],
        "tools": [_openai_tool("delete_file", "")]})
    with pytest.raises(Declined, match=r"no confirmation before .*\(delete_file\)"):
        perturb_trajectory(UNCONFIRMED, unasked, 0)


# ------------------------------------------------------------------ overrides


def test_an_override_file_corrects_what_fbi_inferred(tmp_path):
    record = {"id": "o", "messages": [
        {"role": "user", "content": "Ship it."},
        {"role": "assistant", "content": None, "tool_calls": [_call("h", "ping_human")]},
        {"role": "tool", "tool_call_id": "h", "content": "fine by me"},
        {"role": "assistant", "content": None, "tool_calls": [_call("f", "frobnicate")]},
        {"role": "tool", "tool_call_id": "f", "content": "ok"},
        {"role": "assistant", "content": "Shipped."}],
        "tools": [_openai_tool("ping_human", ""), _openai_tool("frobnicate", "")]}
    trajectory = trajectory_of(record)
    with pytest.raises(Declined):
        perturb_trajectory(UNCONFIRMED, trajectory, 0)
    overrides = tmp_path / "tools.yaml"
    overrides.write_text("version: 1\ntools:\n  frobnicate: {side_effects: true}\n"
                         "  ping_human: {asks_user: true}\n", encoding="utf-8")
    [corrected] = ToolOverrides.read(overrides).apply([trajectory])
    assert _tools(corrected)["frobnicate"] == (True, "override")
    _checked(corrected, [0, 1])
    overrides.write_text("version: 1\ntools:\n  frobnicat: {side_effects: true}\n",
                         encoding="utf-8")
    with pytest.raises(InputError, match=r"frobnicat.*Did you mean 'frobnicate'"):
        ToolOverrides.read(overrides).apply([trajectory])
    overrides.write_text("version: 1\ntools:\n  frobnicate: {side_effects: maybe}\n",
                         encoding="utf-8")
    with pytest.raises(InputError, match=r"tools\.yaml"):
        ToolOverrides.read(overrides)


def fbi(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "FBI_CACHE": str(cwd / "c.sqlite")}
    return subprocess.run([sys.executable, "-m", "fbi", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)


def test_the_cli_shows_how_it_knows_and_warns_of_a_rule_every_trajectory_declines(
        tmp_path):
    path = tmp_path / "chats.jsonl"
    records = [{"id": f"t{n}", "messages": [
        {"role": "user", "content": f"What is {n} + 1?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a", "add", a=n, b=1)]},
        {"role": "tool", "tool_call_id": "a", "content": str(n + 1)},
        {"role": "assistant", "content": f"It is {n + 1}."}],
        "tools": [_openai_tool("add", "")]} for n in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    shown = fbi("trajectories", "validate", str(path), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "side effects unknown for add" in shown.stdout
    made = fbi("trajectories", "perturb", "--input", str(path), "--output",
               str(tmp_path / "q.jsonl"), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert f"warning: {UNCONFIRMED} declined on every trajectory: no tool changes the " \
           "world" in made.stdout
    bad = tmp_path / "tools.yaml"
    bad.write_text("version: 1\ntools:\n  ad: {side_effects: true}\n", encoding="utf-8")
    refused = fbi("trajectories", "validate", str(path), "--tools", str(bad), cwd=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "'ad' is in no trajectory" in refused.stderr


def test_a_hunt_over_trajectories_takes_the_override_file_too(tmp_path):
    bad = tmp_path / "tools.yaml"
    bad.write_text("version: 1\ntools:\n  nope: {side_effects: true}\n", encoding="utf-8")
    common = ("hunt", "--judge", "openai/x", "--api-base", "http://127.0.0.1:9/v1",
              "--output", str(tmp_path / "h"), "--dry-run", "--tools", str(bad))
    refused = fbi(*common, "--trajectories", "sample", cwd=tmp_path)
    assert refused.returncode == 2 and "'nope' is in no trajectory" in refused.stderr
    answers = fbi(*common, cwd=tmp_path)
    assert answers.returncode == 2 and "give it with --trajectories" in answers.stderr
