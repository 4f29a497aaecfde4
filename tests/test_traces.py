"""Traces as trajectories (issue 66): OpenTelemetry GenAI spans in OTLP JSON (the
semantic conventions' message attributes, and the older indexed prompt/completion
attributes), OpenInference spans as Phoenix exports them (nested attributes, dotted
keys, a dataframe's rows) and spans nested in their parents — each built here by hand in
the shape its tool writes, read into the same trajectory, and each malformed trace
refused with one message naming the file, the trace and the span."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fbi.errors import InputError
from fbi.perturb import perturb_trajectory
from fbi.trajectories import (
    changed_step,
    confirmations,
    read_trajectories,
    render,
    rendered_steps,
)

T0 = 1_730_000_000_000_000_000  # ns since the epoch


def _value(value) -> dict:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value if isinstance(value, str) else json.dumps(value)}


def otlp_span(span_id, parent, name, start, attributes, error=False) -> dict:
    span = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": span_id,
            "name": name, "kind": 1, "startTimeUnixNano": str(T0 + start * 10**9),
            "endTimeUnixNano": str(T0 + (start + 1) * 10**9),
            "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
            "status": {"code": 2, "message": "timeout"} if error else {}}
    if parent:
        span["parentSpanId"] = parent
    return span


def _parts_message(role, text=None, calls=(), response=None) -> dict:
    parts = [{"type": "text", "content": text}] if text else []
    parts += [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    if response:
        parts.append({"type": "tool_call_response", "id": response[0],
                      "response": response[1]})
    return {"role": role, "parts": parts}


TASK = "Book me the cheapest flight from Oslo to Rome on 3 May."


def genai_otlp() -> dict:
    """An agent (``travel``) that searches through a sub-agent (``searcher``), hits a
    tool error, asks for the user's yes and books: OTel GenAI semantic conventions."""
    user = _parts_message("user", TASK)
    ask = _parts_message("assistant", "The cheapest is SK101 at 120 EUR. Shall I book "
                                      "it?")
    yes = _parts_message("user", "Yes, book it.")
    spans = [
        otlp_span("a0", None, "invoke_agent travel", 0, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel",
            "gen_ai.output.messages": [_parts_message("assistant", "Booked SK101: "
                                                                   "ABC123.")]}),
        otlp_span("c1", "a0", "chat gpt-4o", 1, {
            "gen_ai.operation.name": "chat",
            "gen_ai.tool.definitions": [
                {"type": "function", "name": "delegate_search",
                 "description": "Ask the search agent."},
                {"type": "function", "name": "book_flight", "description": "Books."}],
            "gen_ai.input.messages": [user],
            "gen_ai.output.messages": [_parts_message(
                "assistant", calls=[("t1", "delegate_search", {"route": "OSL-FCO"})])]}),
        otlp_span("s0", "a0", "invoke_agent searcher", 2, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "searcher"}),
        otlp_span("c2", "s0", "chat gpt-4o-mini", 3, {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": [_parts_message("user", "Find OSL-FCO flights.")],
            "gen_ai.output.messages": [_parts_message(
                "assistant", calls=[("t2", "search_flights", {"from": "OSL", "to": "FCO"})])]}),
        otlp_span("x2", "c2", "execute_tool search_flights", 4, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_flights",
            "gen_ai.tool.call.id": "t2"}, error=True),
        otlp_span("c3", "s0", "chat gpt-4o-mini", 5, {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": [_parts_message("user", "Find OSL-FCO flights."),
                                      _parts_message("assistant", calls=[
                                          ("t2", "search_flights", {})]),
                                      _parts_message("tool", response=("t2", "timeout"))],
            "gen_ai.output.messages": [_parts_message(
                "assistant", calls=[("t3", "search_flights", {"from": "OSL", "to": "FCO"})])]}),
        otlp_span("x3", "c3", "execute_tool search_flights", 6, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_flights",
            "gen_ai.tool.call.id": "t3", "gen_ai.tool.call.result": '[{"flight": "SK101", '
                                                                     '"price": 120}]'}),
        otlp_span("c4", "s0", "chat gpt-4o-mini", 7, {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": [_parts_message("assistant", "SK101, 120 EUR.")]}),
        otlp_span("x1", "a0", "execute_tool delegate_search", 8, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "delegate_search",
            "gen_ai.tool.call.id": "t1", "gen_ai.tool.call.result": "SK101, 120 EUR."}),
        otlp_span("c5", "a0", "chat gpt-4o", 9, {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": [user, _parts_message("tool", response=(
                "t1", "SK101, 120 EUR."))],
            "gen_ai.output.messages": [ask]}),
        otlp_span("c6", "a0", "chat gpt-4o", 10, {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": [user, ask, yes],
            "gen_ai.output.messages": [_parts_message("assistant", calls=[
                ("t4", "book_flight", {"flight": "SK101"})])]}),
        otlp_span("x4", "c6", "execute_tool book_flight", 11, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book_flight",
            "gen_ai.tool.call.id": "t4", "gen_ai.tool.call.result": "ABC123",
            "mcp.tool.annotations.destructiveHint": True}),
    ]
    return {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "travel-app"}}]},
        "scopeSpans": [{"scope": {"name": "agents"}, "spans": spans}]}]}


def _write(tmp_path: Path, name: str, content) -> Path:
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r) + "\n" for r in content), encoding="utf-8")
    else:
        path.write_text(json.dumps(content), encoding="utf-8")
    return path


def test_an_otlp_genai_trace_is_a_trajectory_with_its_agents_errors_and_timing(tmp_path):
    # the Collector's file exporter: one export a line
    (trajectory,) = read_trajectories(_write(tmp_path, "trace.jsonl", [genai_otlp()]))
    assert trajectory.id == "5b8efff798038103d269b633813fc60c"
    assert trajectory.task == TASK and trajectory.domain == "travel-app"
    steps = trajectory.steps
    assert [(s.role, s.agent) for s in steps] == [
        ("assistant", "travel"), ("assistant", "searcher"), ("tool", "searcher"),
        ("assistant", "searcher"), ("tool", "searcher"), ("assistant", "searcher"),
        ("tool", "travel"), ("assistant", "travel"), ("user", "travel"),
        ("assistant", "travel"), ("tool", "travel"), ("assistant", "travel")]
    assert steps[2].is_error and steps[2].text == "timeout"  # the span's error status
    assert steps[4].text.startswith('[{"flight": "SK101"')
    assert steps[8].text == "Yes, book it." and steps[-1].text == "Booked SK101: ABC123."
    assert steps[0].started == pytest.approx(T0 / 1e9 + 1) and steps[0].duration == 1
    tools = {t.name: (t.side_effects, t.known_by) for t in trajectory.tools}
    assert tools["book_flight"] == (True, "mcp")  # the hint the tool span carries
    assert tools["search_flights"] == (False, "inferred")
    # several agents: each step says which, and the numbering reads back
    text = render(trajectory)
    assert "Step 2 · agent searcher · assistant:" in text
    assert len(rendered_steps(text)) == len(steps)
    # the confirmation is the user's yes; the rule leaves it out
    assert [(c.kind, c.first, c.last) for c in confirmations(trajectory)] == \
        [("question", 7, 8)]
    edit = perturb_trajectory("trajectory/unconfirmed-action", trajectory, 0)
    assert changed_step(render(trajectory), render(edit.trajectory)) == edit.step == 8


def test_the_older_indexed_genai_attributes_read_the_same(tmp_path):
    spans = [
        otlp_span("r", None, "agent run", 0, {"gen_ai.operation.name": "invoke_agent",
                                              "gen_ai.agent.name": "solo"}),
        otlp_span("m1", "r", "openai.chat", 1, {
            "gen_ai.operation.name": "chat", "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "Be brief.", "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "Weather in Oslo?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.id": "w1",
            "gen_ai.completion.0.tool_calls.0.name": "get_weather",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Oslo"}'}),
        otlp_span("t", "m1", "execute_tool get_weather", 2, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "w1", "gen_ai.tool.call.result": "4 °C, rain"}),
        otlp_span("m2", "r", "openai.chat", 3, {
            "gen_ai.operation.name": "chat", "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "4 °C and rain in Oslo."})]
    export = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    (trajectory,) = read_trajectories(_write(tmp_path, "old.json", export))
    assert trajectory.task == "Weather in Oslo?"
    assert [(s.role, s.text) for s in trajectory.steps] == [
        ("assistant", ""), ("tool", "4 °C, rain"), ("assistant", "4 °C and rain in Oslo.")]
    assert trajectory.steps[0].calls[0].arguments == {"city": "Oslo"}


def _event(name: str, **attributes) -> dict:
    return {"timeUnixNano": str(T0), "name": name,
            "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()]}


@pytest.mark.parametrize("style", ["message-events", "content-events"])
def test_messages_recorded_as_span_events_read_the_same(tmp_path, style):
    call = {"id": "w1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    first, second = otlp_span("m1", None, "chat", 1, {"gen_ai.operation.name": "chat"}), \
        otlp_span("m2", None, "chat", 3, {"gen_ai.operation.name": "chat"})
    tool = otlp_span("t", None, "execute_tool get_weather", 2, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "w1", "gen_ai.tool.call.result": "4 °C"})
    root = otlp_span("r", None, "invoke_agent", 0, {"gen_ai.operation.name": "invoke_agent"})
    for span in (first, second, tool):
        span["parentSpanId"] = "r"
    if style == "message-events":
        first["events"] = [_event("gen_ai.system.message", content="Be brief."),
                           _event("gen_ai.user.message", content="Weather in Oslo?"),
                           _event("gen_ai.choice", message=json.dumps(
                               {"role": "assistant", "tool_calls": [call]}))]
        second["events"] = [_event("gen_ai.choice", message=json.dumps(
            {"role": "assistant", "content": "4 °C in Oslo."}))]
    else:
        first["events"] = [
            _event("gen_ai.content.prompt", **{"gen_ai.prompt": json.dumps(
                [{"role": "user", "content": "Weather in Oslo?"}])}),
            _event("gen_ai.content.completion", **{"gen_ai.completion": json.dumps(
                [{"role": "assistant", "content": None, "tool_calls": [call]}])})]
        second["events"] = [_event("gen_ai.content.completion", **{
            "gen_ai.completion": json.dumps([{"role": "assistant",
                                              "content": "4 °C in Oslo."}])})]
    export = {"resourceSpans": [{"scopeSpans": [{"spans": [root, first, tool, second]}]}]}
    (trajectory,) = read_trajectories(_write(tmp_path, "events.json", export))
    assert trajectory.task == "Weather in Oslo?"
    assert [(s.role, s.text) for s in trajectory.steps] == [
        ("assistant", ""), ("tool", "4 °C"), ("assistant", "4 °C in Oslo.")]
    assert trajectory.steps[0].calls[0].arguments == {"city": "Oslo"}


def phoenix_spans(nested: bool) -> list[dict]:
    """OpenInference spans as Phoenix's span JSON (nested attributes) or its dataframe's
    rows (dotted ``attributes.…`` columns)."""
    def span(span_id, parent, name, kind, start, attributes, status="OK"):
        record = {"name": name, "context": {"trace_id": "tr-1", "span_id": span_id},
                  "parent_id": parent, "span_kind": kind,
                  "start_time": f"2025-05-01T12:00:{start:02d}+00:00",
                  "end_time": f"2025-05-01T12:00:{start + 1:02d}+00:00",
                  "status_code": status, "status_message": "" if status == "OK" else
                  "ConnectionError"}
        if nested:
            record["attributes"] = attributes
        else:
            record = {"context.trace_id": "tr-1", "context.span_id": span_id,
                      **{k: v for k, v in record.items() if k != "context"},
                      **{f"attributes.{k}": v for k, v in attributes.items()}}
        return record

    def nest(flat: dict) -> dict:
        out: dict = {}
        for key, value in flat.items():
            at = out
            *heads, last = key.split(".")
            for head in heads:
                at = at.setdefault(head, {})
            at[last] = value
        return out

    llm1 = {"openinference.span.kind": "LLM",
            "llm.input_messages": [{"message.role": "user",
                                    "message.content": "Delete draft.txt"}],
            "llm.output_messages": [{"message.role": "assistant", "message.tool_calls": [
                {"tool_call.id": "d1", "tool_call.function.name": "delete_file",
                 "tool_call.function.arguments": '{"path": "draft.txt"}'}]}],
            "llm.tools": [{"tool.json_schema": json.dumps({
                "type": "function", "function": {"name": "delete_file",
                                                 "description": "Deletes a file."}})}]}
    tool = {"openinference.span.kind": "TOOL", "tool.name": "delete_file",
            "input.value": '{"path": "draft.txt"}', "output.value": "no such file"}
    llm2 = {"openinference.span.kind": "LLM",
            "llm.output_messages": [{"message.role": "assistant",
                                     "message.content": "draft.txt does not exist."}]}
    root = {"openinference.span.kind": "AGENT", "input.value": "Delete draft.txt",
            "output.value": "draft.txt does not exist."}
    if nested:
        llm1 = {**nest({k: v for k, v in llm1.items() if not isinstance(v, list)}),
                "llm": {"input_messages": [{"message": {"role": "user",
                                                        "content": "Delete draft.txt"}}],
                        "output_messages": [{"message": {"role": "assistant", "tool_calls": [
                            {"tool_call": {"id": "d1", "function": {
                                "name": "delete_file",
                                "arguments": '{"path": "draft.txt"}'}}}]}}],
                        "tools": llm1["llm.tools"]}}
        tool, llm2, root = nest(tool), nest({"openinference.span.kind": "LLM"}), nest(root)
        llm2["llm"] = {"output_messages": [{"message": {
            "role": "assistant", "content": "draft.txt does not exist."}}]}
    return [span("p0", None, "agent", "AGENT", 0, root),
            span("p1", "p0", "ChatCompletion", "LLM", 1, llm1),
            span("p2", "p1", "delete_file", "TOOL", 2, tool, status="ERROR"),
            span("p3", "p0", "ChatCompletion", "LLM", 3, llm2)]


@pytest.mark.parametrize("nested", [True, False], ids=["span-json", "dataframe-rows"])
def test_openinference_spans_as_phoenix_exports_them(tmp_path, nested):
    name = "spans.json" if nested else "spans.jsonl"
    (trajectory,) = read_trajectories(_write(tmp_path, name, phoenix_spans(nested)))
    assert trajectory.id == "tr-1" and trajectory.task == "Delete draft.txt"
    assert [(s.role, s.is_error) for s in trajectory.steps] == [
        ("assistant", False), ("tool", True), ("assistant", False)]
    assert trajectory.steps[0].calls[0].arguments == {"path": "draft.txt"}
    assert trajectory.steps[1].text == "no such file"
    assert {t.name: t.description for t in trajectory.tools} == \
        {"delete_file": "Deletes a file."}
    assert trajectory.tools[0].side_effects  # "Deletes": the verb says so


def test_spans_nested_in_their_parents_read_as_one_trace(tmp_path):
    flat = phoenix_spans(nested=True)
    root, llm1, tool, llm2 = flat
    for span in flat:
        span["span_attributes"] = span.pop("attributes")
        span["span_id"] = span["context"]["span_id"]
        span["trace_id"] = span.pop("context")["trace_id"]
        span.pop("parent_id")
    llm1["child_spans"] = [tool]
    root["child_spans"] = [llm1, llm2]
    (trajectory,) = read_trajectories(_write(tmp_path, "trail.json",
                                             {"trace_id": "tr-1", "spans": [root]}))
    assert [s.role for s in trajectory.steps] == ["assistant", "tool", "assistant"]


def _broken(change) -> dict:
    export = genai_otlp()
    spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    change({s["spanId"]: s for s in spans}, spans)
    return export


@pytest.mark.parametrize(("change", "message"), [
    (lambda by, spans: by["s0"].update(parentSpanId="zz"),
     "span 's0' (invoke_agent searcher)'s parent 'zz' is not in the trace"),
    (lambda by, spans: by["c1"].pop("parentSpanId"),
     "two roots: span 'a0' (invoke_agent travel) and span 'c1' (chat gpt-4o)"),
    (lambda by, spans: (by["c2"].update(parentSpanId="x2"),
                        by["x2"].update(parentSpanId="c2")),
     "a cycle of parents through span"),
    (lambda by, spans: by["x4"].update(attributes=[
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.name", "value": {"stringValue": "cancel_flight"}}]),
     "span 'x4' (execute_tool book_flight) runs the tool 'cancel_flight', answering no "
     "call a model span made"),
], ids=["missing-parent", "two-roots", "cycle", "tool-without-call"])
def test_a_trace_that_makes_no_trajectory_is_one_message(tmp_path, change, message):
    path = _write(tmp_path, "bad.json", _broken(change))
    with pytest.raises(InputError) as raised:
        read_trajectories(path)
    said = str(raised.value)
    assert said.startswith(f"{path}") and "5b8efff798038103d269b633813fc60c" in said
    assert message in said and "Fix:" in said


def test_a_file_mixing_spans_and_trajectories_is_refused(tmp_path):
    record = {"id": "t", "messages": [{"role": "user", "content": "hi"},
                                      {"role": "assistant", "content": "hello"}]}
    path = _write(tmp_path, "mixed.jsonl", [genai_otlp(), record])
    with pytest.raises(InputError, match="a trajectory among spans"):
        read_trajectories(path)


def test_a_trace_is_validated_perturbed_and_judged_from_the_command_line(tmp_path):
    path = _write(tmp_path, "trace.json", genai_otlp())
    env = {**os.environ, "COLUMNS": "200", "FBI_CACHE": str(tmp_path / "c.sqlite"),
           "OPENAI_API_KEY": "sk-test"}

    def fbi(*args):
        return subprocess.run([sys.executable, "-m", "fbi", *args], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=300)

    shown = fbi("trajectories", "validate", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "1 trajectories, 12 steps" in shown.stdout
    made = fbi("trajectories", "perturb", "--input", str(path), "--output",
               str(tmp_path / "q.jsonl"))
    assert made.returncode == 0, made.stderr
    queue = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert "5b8efff798038103d269b633813fc60c:trajectory/unconfirmed-action" in \
        {row["id"] for row in queue}
    # judged end to end: a step-level judge that names the changed step, on the steps
    # the judge was shown (the sub-agent's marked), every one placed exactly
    from openai_server import ChatServer
    from planted_judges import step_judge

    from fbi import load_dataset

    instances = load_dataset(str(tmp_path / "q.jsonl")).instances
    with ChatServer(script=step_judge(instances, {})) as server:
        judged = fbi("evaluate", "--judge", "openai/step", "--api-base", server.url,
                     "--dataset", str(tmp_path / "q.jsonl"), "--strategy", "agent_step",
                     "--output", str(tmp_path / "run"), "--no-cache")
    assert judged.returncode == 0, judged.stderr
    report = fbi("report", str(tmp_path / "run"), "--output", str(tmp_path / "r"))
    assert report.returncode == 0, report.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    placed = {r["category"]: (r["exact"], r["exact_share"]) for r in summary["steps"]}
    made = {i.category for i in instances if i.category != "score-invariant"}
    assert set(placed) == made and all(share == 1.0 for _, share in placed.values())
    from fbi.taxonomy import get_category

    by_trail = {r["group"]: r["rate"] for r in summary["trail"]}  # beside fbi's own
    assert set(by_trail) == {get_category(c).trail for c in made}
    assert "Agents by TRAIL's taxonomy" in report.stdout
    bad = _write(tmp_path, "bad.json", _broken(lambda by, spans: by["c1"].pop(
        "parentSpanId")))
    refused = fbi("trajectories", "validate", str(bad))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "two roots" in refused.stderr and "bad.json" in refused.stderr


def test_a_hunt_over_traces_can_name_a_sub_agent_s_steps(tmp_path):
    """The hunt's step predicates read the agent from the rendering the judge saw: an
    edit at the searcher's step is "at a sub-agent's step" and "of the agent searcher";
    one at the answering agent's is neither."""
    from fbi.hunt._predicates import PREDICATES, EditView
    from fbi.hunt._trajectory_edits import Toolbox

    (trajectory,) = read_trajectories(_write(tmp_path, "trace.json", genai_otlp()))
    toolbox = Toolbox((), {}, ("searcher", "travel"))
    by_name = {p.name: p for p in toolbox.predicates()}
    gold = render(trajectory)

    def view(index: int) -> EditView:
        steps = list(trajectory.steps)
        steps[index] = steps[index].model_copy(update={"text": steps[index].text + " (!)"})
        edited = render(trajectory.model_copy(update={"steps": tuple(steps)}))
        return EditView("task", gold, edited, edited, "agent", "trajectory/x",
                        ("trajectory/x",))

    sub, main = view(5), view(7)  # the searcher's answer; the travel agent's question
    assert PREDICATES["step:sub_agent"].test(sub) and by_name["agent:searcher"].test(sub)
    assert not by_name["agent:travel"].test(sub)
    assert not PREDICATES["step:sub_agent"].test(main) and by_name["agent:travel"].test(main)


def long_trajectory(calls: int = 120):
    """An agent that reads ``calls`` pages one by one, then answers: 2 × calls + 1
    steps."""
    from fbi.trajectories import trajectory_of

    messages = [{"role": "user", "content": "Sum the totals of pages 1 to "
                                            f"{calls}."}]
    for n in range(1, calls + 1):
        messages += [{"role": "assistant", "content": f"Reading page {n}.", "tool_calls": [
            {"id": f"p{n}", "type": "function",
             "function": {"name": "read_page", "arguments": json.dumps({"page": n})}}]},
            {"role": "tool", "tool_call_id": f"p{n}", "content": f"total {n * 7}"}]
    messages.append({"role": "assistant",
                     "content": f"The sum is {7 * calls * (calls + 1) // 2}."})
    return trajectory_of({"id": "long", "messages": messages, "tools": [
        {"type": "function", "function": {"name": "read_page", "description": "Reads a "
                                                                               "page."}}]})


@pytest.mark.parametrize("category", ["trajectory/ignored-error", "trajectory/skipped-step",
                                      "trajectory/redundant-loop",
                                      "trajectory/premature-answer"])
def test_a_long_trajectory_is_windowed_around_the_change_keeping_its_numbers(category):
    from fbi.perturb import trajectory_candidates

    trajectory = long_trajectory()
    budget = 3_000
    (whole,), _ = trajectory_candidates([trajectory], [category], seed=3)
    (cut,), _ = trajectory_candidates([trajectory], [category], seed=3, window=budget)
    assert len(whole.gold_answer) > budget  # (the window had work to do)
    assert len(cut.perturbed_answer) <= budget and len(cut.gold_answer) <= budget
    # the changed step is kept, by the number it has in the whole trajectory
    assert cut.provenance.changed_step == whole.provenance.changed_step
    assert cut.rationale.startswith(whole.rationale.split(" (")[0])
    assert "(the judge sees steps " in cut.rationale and not cut.flags
    shown = [s.number for s in rendered_steps(cut.perturbed_answer)]
    assert shown == list(range(shown[0], shown[-1] + 1))  # one stretch, numbers kept
    assert whole.provenance.changed_step in shown
    assert "left out …]" in cut.gold_answer
    # a step-level judge reading the window places the step exactly
    from planted_judges import step_judge

    judged = json.loads(step_judge([cut], {})({"messages": [{"role": "user", "content":
        f"<answer>\n{cut.perturbed_answer}\n</answer>"}]}))["score"]
    assert judged == cut.provenance.changed_step
