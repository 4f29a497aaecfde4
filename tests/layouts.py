"""One support agent's runs written in every layout fbi reads (issue 66), for the tests
and `benchmarks/traces.py`: the world's shapes, written from their specifications, not
from fbi's reader.

Run ``i`` answers "cancel order #W…": it reads the stock of N items (every third read
two calls at once; a tracking tool it is offered goes unused), asks the user
"Shall I cancel order #W…? (yes/no)" — through an ``ask_user`` tool in odd runs, as a
question in even ones — and calls ``cancel_pending_order`` on the yes, then reports a
value it read. The write tool is declared as each layout can: MCP's ``destructiveHint``
in the chat layouts' definitions and on the OTLP tool span, τ-bench's own write tool
name, the verb ("cancel") for OpenInference and AgentRewardBench.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

TOOLS = [("get_stock", "Returns an item's stock.", False),
         ("track_parcel", "Returns a parcel's tracking status.", False),  # (never called)
         ("ask_user", "Ask the user a question and wait for the answer.", False),
         ("cancel_pending_order", "Cancels a pending order.", True)]


def run_turns(i: int, reads: int) -> tuple[str, list[dict]]:
    """Run ``i``: its task and its turns as OpenAI chat messages (after the task)."""
    order = f"#W{1000 + i}"
    turns: list[dict] = []
    n = 0
    while n < reads:
        batch = [n, n + 1] if n % 3 == 0 and n + 1 < reads else [n]
        turns.append({"role": "assistant", "content": f"Checking item {n}.", "tool_calls": [
            {"id": f"r{i}-{k}", "type": "function",
             "function": {"name": "get_stock", "arguments": json.dumps({"item": k})}}
            for k in batch]})
        turns += [{"role": "tool", "tool_call_id": f"r{i}-{k}",
                   "content": f"item {k}: {(k * 7 + i) % 50} in stock"} for k in batch]
        n += len(batch)
    question = f"Shall I cancel order {order}? (yes/no)"
    if i % 2:
        turns += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": f"a{i}", "type": "function", "function": {
                "name": "ask_user", "arguments": json.dumps({"question": question})}}]},
            {"role": "tool", "tool_call_id": f"a{i}", "content": "yes"}]
    else:
        turns += [{"role": "assistant", "content": question}, {"role": "user",
                                                                "content": "yes"}]
    turns += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {
            "name": "cancel_pending_order",
            "arguments": json.dumps({"order_id": order, "reason": "no longer needed"})}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": '{"status": "cancelled"}'},
        {"role": "assistant", "content": f"Order {order} is cancelled; item 0 had "
                                         f"{i % 50} in stock."}]
    return f"Cancel my order {order}, I no longer need it (run {i}).", turns


def _openai_tools(mcp: bool) -> list[dict]:
    return [{"type": "function", "function": {"name": n, "description": d,
                                              "parameters": {"type": "object"}},
             **({"annotations": {"destructiveHint": True}} if mcp and effect else {})}
            for n, d, effect in TOOLS]


def openai_record(i: int, reads: int) -> dict:
    task, turns = run_turns(i, reads)
    return {"id": f"run-{i}", "messages": [{"role": "user", "content": task}, *turns],
            "tools": _openai_tools(mcp=True)}


def anthropic_record(i: int, reads: int) -> dict:
    task, turns = run_turns(i, reads)
    messages: list[dict] = [{"role": "user", "content": task}]
    results: list[dict] = []
    for turn in turns:
        if turn["role"] == "tool":
            results.append({"type": "tool_result", "tool_use_id": turn["tool_call_id"],
                            "content": turn["content"]})
            continue
        if results:
            messages.append({"role": "user", "content": results})
            results = []
        if turn["role"] == "user":
            messages.append({"role": "user", "content": turn["content"]})
            continue
        blocks = [{"type": "text", "text": turn["content"]}] if turn["content"] else []
        blocks += [{"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                    "input": json.loads(c["function"]["arguments"])}
                   for c in turn.get("tool_calls", ())]
        messages.append({"role": "assistant", "content": blocks})
    return {"id": f"run-{i}", "messages": messages, "tools": [
        {"name": n, "description": d, "input_schema": {"type": "object"},
         **({"annotations": {"destructiveHint": True}} if effect else {})}
        for n, d, effect in TOOLS]}


def tau_record(i: int, reads: int) -> dict:
    task, turns = run_turns(i, reads)
    return {"task_id": i, "trial": 0, "reward": 1.0, "info": {"task": {"instruction": task}},
            "traj": [{"role": "system", "content": "policy"},
                     {"role": "user", "content": task}, *turns]}


def _parts(turn: dict) -> dict:
    parts = [{"type": "text", "content": turn["content"]}] if turn.get("content") else []
    parts += [{"type": "tool_call", "id": c["id"], "name": c["function"]["name"],
               "arguments": json.loads(c["function"]["arguments"])}
              for c in turn.get("tool_calls", ())]
    if turn["role"] == "tool":
        parts = [{"type": "tool_call_response", "id": turn["tool_call_id"],
                  "response": turn["content"]}]
    return {"role": turn["role"], "parts": parts}


def _attrs(values: dict) -> list[dict]:
    return [{"key": k, "value": {"boolValue": v} if isinstance(v, bool) else
             {"stringValue": v if isinstance(v, str) else json.dumps(v)}}
            for k, v in values.items()]


def otlp_record(i: int, reads: int) -> dict:
    """One export: the run's spans — an agent, its model calls (the history as input
    messages), its tool calls; the reads by a sub-agent in odd runs."""
    task, turns = run_turns(i, reads)
    trace = f"{i:032x}"
    spans, clock, history = [], 0, [_parts({"role": "user", "content": task})]

    def span(span_id, parent, name, attributes):
        nonlocal clock
        clock += 1
        made = {"traceId": trace, "spanId": span_id, "name": name,
                "startTimeUnixNano": str(1_730_000_000 * 10**9 + clock * 10**6),
                "endTimeUnixNano": str(1_730_000_000 * 10**9 + clock * 10**6 + 500_000),
                "attributes": _attrs(attributes)}
        if parent:
            made["parentSpanId"] = parent
        spans.append(made)

    span("root", None, "invoke_agent support", {"gen_ai.operation.name": "invoke_agent",
                                                "gen_ai.agent.name": "support"})
    if i % 2:
        span("sub", "root", "invoke_agent stock", {"gen_ai.operation.name": "invoke_agent",
                                                   "gen_ai.agent.name": "stock"})
    for n, turn in enumerate(turns):
        if turn["role"] == "assistant":
            reading = any(c["function"]["name"] == "get_stock"
                          for c in turn.get("tool_calls", ()))
            parent = "sub" if i % 2 and reading else "root"
            span(f"m{n}", parent, "chat model", {
                "gen_ai.operation.name": "chat", "gen_ai.input.messages": list(history),
                "gen_ai.output.messages": [_parts(turn)],
                **({"gen_ai.tool.definitions": [
                    {"type": "function", "name": name, "description": d}
                    for name, d, _ in TOOLS]} if n == 0 else {})})
            last_model = f"m{n}"
        elif turn["role"] == "tool":
            name = next(c["function"]["name"] for t in turns for c in t.get("tool_calls", ())
                        if c["id"] == turn["tool_call_id"])
            span(f"t{n}", last_model, f"execute_tool {name}", {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": turn["tool_call_id"],
                "gen_ai.tool.call.result": turn["content"],
                **({"mcp.tool.annotations.destructiveHint": True}
                   if name == "cancel_pending_order" else {})})
        history.append(_parts(turn))
    return {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "shop"})},
                               "scopeSpans": [{"spans": spans}]}]}


def openinference_records(i: int, reads: int) -> list[dict]:
    """The run as Phoenix's span JSON: an AGENT span, an LLM span a turn, a TOOL span a
    result (the write tool's side effects left to its verb)."""
    task, turns = run_turns(i, reads)
    records, history = [], [{"message": {"role": "user", "content": task}}]

    def message(turn: dict) -> dict:
        body = {"role": turn["role"], "content": turn.get("content") or ""}
        if turn.get("tool_calls"):
            body["tool_calls"] = [{"tool_call": {"id": c["id"], "function": c["function"]}}
                                  for c in turn["tool_calls"]]
        if turn["role"] == "tool":
            body["tool_call_id"] = turn["tool_call_id"]
        return {"message": body}

    def span(span_id, parent, kind, attributes, clock):
        records.append({"name": kind.lower(), "context": {"trace_id": f"oi-{i}",
                                                          "span_id": span_id},
                        "parent_id": parent, "span_kind": kind,
                        "start_time": f"2025-05-01T12:{clock // 60 % 60:02d}:"
                                      f"{clock % 60:02d}+00:00",
                        "status_code": "OK", "attributes": {
                            "openinference": {"span": {"kind": kind}}, **attributes}})

    span("root", None, "AGENT", {"input": {"value": task}}, 0)
    for n, turn in enumerate(turns, 1):
        if turn["role"] == "assistant":
            span(f"l{n}", "root", "LLM", {"llm": {
                "input_messages": list(history), "output_messages": [message(turn)],
                **({"tools": [{"tool": {"json_schema": json.dumps(
                    {"type": "function", "function": {"name": name, "description": d}})}}
                    for name, d, _ in TOOLS]} if n == 1 else {})}}, n)
            last_model = f"l{n}"
        elif turn["role"] == "tool":
            name = next(c["function"]["name"] for t in turns for c in t.get("tool_calls", ())
                        if c["id"] == turn["tool_call_id"])
            span(f"t{n}", last_model, "TOOL", {"tool": {"name": name}, "tool_call": {
                "id": turn["tool_call_id"]}, "output": {"value": turn["content"]}}, n)
        history.append(message(turn))
    return records


def browsergym_record(i: int, reads: int) -> dict:
    """The run as AgentRewardBench's trajectory JSON: one step an assistant turn, its
    calls BrowserGym's Python action lines (custom actions: the tools by name), what the
    calls returned the next step's page. Web tasks have no user in the loop, so the run
    asks through the ``ask_user`` action (a user's chat reply has no place in the
    layout)."""
    task, turns = run_turns(i | 1, reads)  # an odd run: the ask_user variant
    steps: list[dict] = []
    for turn in turns:
        if turn["role"] == "tool":
            steps[-1]["pending"].append(turn["content"])
            continue
        if turn.get("tool_calls"):
            action = "\n".join(
                f"{c['function']['name']}(" + ", ".join(
                    f"{k}={v!r}" for k, v in json.loads(c['function']['arguments']).items())
                + ")" for c in turn["tool_calls"])
        else:
            action = f"send_msg_to_user({turn['content']!r})"
        steps.append({"num": len(steps), "reasoning": turn.get("content") or "",
                      "action": action, "pending": []})
    steps.append({"num": len(steps), "action": None, "reasoning": None, "pending": []})
    for before, after in itertools.pairwise(steps):
        after["axtree_pruned"] = "\n".join(before.pop("pending"))
        after["url"], after["last_action_error"] = "http://shop.example/orders", ""
    steps[-1].pop("pending")
    steps[0]["url"], steps[0]["last_action_error"] = "http://shop.example/", ""
    return {"benchmark": "shop", "agent": "agent", "model": "m", "goal": task,
            "trajectory_dir": f"/results/run_{i}", "summary_info": {"cum_reward": 1.0},
            "steps": steps}


LAYOUTS = {
    "OpenAI chat": ("jsonl", lambda i, reads: [openai_record(i, reads)]),
    "Anthropic blocks": ("jsonl", lambda i, reads: [anthropic_record(i, reads)]),
    "τ-bench results": ("jsonl", lambda i, reads: [tau_record(i, reads)]),
    "OTLP GenAI spans": ("jsonl", lambda i, reads: [otlp_record(i, reads)]),
    "OpenInference spans": ("jsonl", openinference_records),
    "AgentRewardBench (BrowserGym)": ("jsonl", lambda i, reads: [browsergym_record(i,
                                                                                 reads)]),
}


def write(layout: str, runs: int, reads: int, path: Path) -> Path:
    _, records = LAYOUTS[layout]
    with path.open("w", encoding="utf-8") as out:
        for i in range(runs):
            for record in records(i, reads):
                out.write(json.dumps(record) + "\n")
    return path
