"""Agents as tracing tools record them (issue 66): OpenTelemetry spans and OpenInference
spans read into `Trajectory` records, one a trace.

**What is read.** Spans in any of these shapes, a file of one shape:

* **OTLP JSON** — what an OpenTelemetry exporter writes (the Collector's file exporter:
  one ``ExportTraceServiceRequest`` a line; or one document): ``resourceSpans`` →
  ``scopeSpans`` → ``spans`` with ``traceId``, ``spanId``, ``parentSpanId``,
  ``startTimeUnixNano``, ``attributes`` as ``{key, value: {stringValue | intValue | …}}``,
  ``events`` and ``status.code`` (2, ``STATUS_CODE_ERROR``: an error);
* **span records** — one span an object, as Arize Phoenix exports them (``context.
  trace_id``, ``context.span_id``, ``parent_id``, ``start_time``, ``status_code``,
  ``attributes`` nested or with dotted keys, or a spans dataframe's rows with
  ``attributes.…`` columns), with ``trace_id``/``span_id``/``parent_span_id`` and
  ``span_attributes`` accepted too, and child spans nested in ``child_spans`` or
  ``children``; a record holding ``spans`` is a trace of them.

**What a span means**, by the conventions that name it:

* OpenTelemetry's GenAI semantic conventions: ``gen_ai.operation.name`` ``chat`` /
  ``text_completion`` / ``generate_content`` (a model call), ``execute_tool`` (a tool
  call: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``,
  ``gen_ai.tool.call.result``), ``invoke_agent`` / ``create_agent``
  (``gen_ai.agent.name``); messages in ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` (``role`` and ``parts``: ``text``, ``tool_call``,
  ``tool_call_response``), in the older ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``
  attributes, or in ``gen_ai.user.message`` / ``gen_ai.assistant.message`` /
  ``gen_ai.tool.message`` / ``gen_ai.choice`` events; tools offered in
  ``gen_ai.tool.definitions``;
* OpenInference's (``openinference.span.kind`` ``LLM``, ``TOOL``, ``AGENT``, ``CHAIN``):
  ``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*`` (``role``,
  ``content`` or ``contents``, ``tool_calls.M.tool_call.{id, function.name,
  function.arguments}``, ``tool_call_id``), ``llm.tools.N.tool.json_schema``; a tool's
  ``tool.name``, ``tool.description``, ``input.value`` (its arguments), ``output.value``.

**How spans become steps.** In start-time order: a model call's output messages are the
assistant's steps (its text and tool calls); a user message in a model call's input not
seen before is a user step (the first is the task); a tool span is the result of the
call it names by id (else the earliest open call of its tool), an error when its status
is; an agent's own output, when no model call said it, is the final answer. Every step
says which agent took it (the nearest ``invoke_agent`` / ``AGENT`` span above it) and
when (its span's start and duration).

**Refused**, one message naming the file, the trace and the span: a parent that is
not in the trace, a cycle of parents, two roots, a tool span that answers no call a
model made (export the model spans with their messages: content capture on).
"""

from __future__ import annotations

from fbi.trajectories._conventions import (
    Message,
    _json,
    _text,
    _tools_offered,
    model_messages,
)
from fbi.trajectories._model import TrajectoryError
from fbi.trajectories._spans import Span, _first, is_trace_record, spans_of

__all__ = ["is_trace_record", "spans_of", "trace_records"]


# ------------------------------------------------------------------ traces → records


def trace_records(spans: list[Span], where: str) -> list[dict]:
    """One record in fbi's own layout per trace of ``spans`` (in the order each trace
    first appears), read by `fbi.trajectories.trajectory_of` like any other."""
    traces: dict[str, list[Span]] = {}
    for span in spans:
        if not span.span_id:
            raise TrajectoryError(where, None, f"{span.label()} has no span id",
                                  "export every span with its span id")
        traces.setdefault(span.trace_id or "(no trace id)", []).append(span)
    return [_record(trace_id, trace, where) for trace_id, trace in traces.items()]


def _tree(trace_id: str, spans: list[Span]) -> tuple[Span, dict[str, Span]]:
    """The trace's root and its spans by id; a TrajectoryError for a parent not in the
    trace, a cycle of parents, two roots."""
    by_id: dict[str, Span] = {}
    for span in spans:
        if span.span_id in by_id:
            raise TrajectoryError(trace_id, None, f"the span id {span.span_id!r} is used "
                                  "twice", "export each span once")
        by_id[span.span_id] = span
    for span in spans:
        if span.parent_id is not None and span.parent_id not in by_id:
            raise TrajectoryError(trace_id, None, f"{span.label()}'s parent "
                                  f"{span.parent_id!r} is not in the trace",
                                  "export the whole trace")
    for span in spans:  # every chain of parents ends at a root
        seen, at = {span.span_id}, span
        while at.parent_id is not None:
            at = by_id[at.parent_id]
            if at.span_id in seen:
                raise TrajectoryError(trace_id, None, f"a cycle of parents through "
                                      f"{at.label()}", "each span's parent must be an "
                                      "earlier link towards one root")
            seen.add(at.span_id)
    roots = [s for s in spans if s.parent_id is None]
    if len(roots) > 1:
        raise TrajectoryError(trace_id, None, f"two roots: {roots[0].label()} and "
                              f"{roots[1].label()}", "a trace has one root span; export "
                              "each trace whole, with its own trace id")
    return roots[0], by_id


def _agent_name(span: Span) -> str:
    return str(_first(span.attributes, "gen_ai.agent.name", "agent.name",
                      "graph.node.id") or span.name.removeprefix("invoke_agent ").strip()
               or span.span_id)


def _record(trace_id: str, spans: list[Span], where: str) -> dict:
    root, by_id = _tree(trace_id, spans)
    position = {s.span_id: n for n, s in enumerate(spans)}

    def agent_of(span: Span) -> str | None:
        at: Span | None = span
        while at is not None:
            if at.kind == "agent":
                return _agent_name(at)
            at = by_id.get(at.parent_id) if at.parent_id else None
        return None

    root_agent = agent_of(root)
    ordered = sorted(spans, key=lambda s: (s.start if s.start is not None else
                                           float("inf"), position[s.span_id]))
    steps: list[dict] = []
    task: str | None = None
    users = _UserTurns()
    open_calls: dict[str, str] = {}
    tools: dict[str, dict] = {}

    def timing(span: Span) -> dict:
        duration = span.end - span.start if span.end is not None and \
            span.start is not None else None
        return {"started": span.start, "duration": duration}

    def answer(call_id: str, name: str, text: str, error: bool, span: Span) -> None:
        open_calls.pop(call_id, None)
        steps.append({"role": "tool", "text": text, "call_id": call_id, "tool": name,
                      "is_error": error, "agent": agent_of(span), **timing(span)})

    for span in ordered:
        if span.kind == "model":
            for definition in _tools_offered(span):
                function = definition.get("function", definition)
                if isinstance(function, dict) and isinstance(function.get("name"), str):
                    tools.setdefault(function["name"], {
                        "name": function["name"],
                        "description": _text(function.get("description")),
                        "parameters": function.get("parameters") if isinstance(
                            function.get("parameters"), dict) else {},
                        **({"annotations": definition["annotations"]} if isinstance(
                            definition.get("annotations"), dict) else {})})
            inputs = model_messages(span, output=False)
            for message in inputs:
                if message.role == "tool" and message.call_id in open_calls:
                    answer(message.call_id, open_calls[message.call_id], message.text,
                           False, span)  # a result no tool span recorded
            if agent_of(span) == root_agent:  # (a sub-agent's "user" is its caller)
                for text in users.new(inputs):
                    if task is None:
                        task = text
                    else:
                        steps.append({"role": "user", "text": text,
                                      "agent": agent_of(span), **timing(span)})
            said = [m for m in model_messages(span, output=True)
                    if m.role in ("assistant", "model", "ai")][:1]  # (the first choice)
            for message in said:
                calls = [{"id": c.id, "name": c.name, "arguments": c.arguments}
                         for c in message.calls]
                for call in message.calls:
                    open_calls[call.id] = call.name
                if message.text or calls:
                    steps.append({"role": "assistant", "text": message.text,
                                  "calls": calls, "agent": agent_of(span), **timing(span)})
        elif span.kind == "tool":
            flat = span.attributes
            name = str(_first(flat, "gen_ai.tool.name", "tool.name") or
                       span.name.removeprefix("execute_tool ").strip())
            ident = _first(flat, "gen_ai.tool.call.id", "tool_call.id", "tool.call_id")
            call_id = str(ident) if ident is not None and str(ident) in open_calls else \
                next((c for c, n in open_calls.items() if n == name), None)
            if call_id is None:
                raise TrajectoryError(trace_id, None, f"{span.label()} runs the tool "
                                      f"{name!r}, answering no call a model span made",
                                      "export the model spans with their messages "
                                      "(content capture on, e.g. OTEL_INSTRUMENTATION_"
                                      "GENAI_CAPTURE_MESSAGE_CONTENT=true)")
            result = _first(flat, "gen_ai.tool.call.result", "output.value",
                            "tool.output")
            text = _text(result) if result is not None else span.status_message
            answer(call_id, name, text, span.error, span)
            definition = tools.setdefault(name, {"name": name, "description": "",
                                                 "parameters": {}})
            definition["description"] = definition["description"] or _text(
                _first(flat, "gen_ai.tool.description", "tool.description"))
            hints = {key.rsplit(".", 1)[-1]: value for key, value in flat.items()
                     if key.endswith(("readOnlyHint", "destructiveHint"))}
            if hints:
                definition["annotations"] = hints
            if isinstance(flat.get("fbi.side_effects"), bool):
                definition["side_effects"] = flat["fbi.side_effects"]
    if task is None:
        task = _root_text(root, output=False)
    final = _root_text(root, output=True)
    if final and not (steps and steps[-1]["role"] == "assistant" and
                      steps[-1]["text"].strip() == final.strip()):
        steps.append({"role": "assistant", "text": final, "agent": root_agent,
                      **timing(root)})
    if not task:
        raise TrajectoryError(trace_id, None, "no user message states the task",
                              "export the model spans with their input messages")
    return {"id": trace_id, "task": task, "tools": list(tools.values()), "steps": steps,
            "domain": str(_first(root.attributes, "service.name") or "")}


class _UserTurns:
    """The user's turns as model calls' inputs show them: a model call is sent the
    history, so the user messages past those seen before are new; an input that holds
    fewer (an agent that sends only the latest turn) has as new the user messages after
    its last assistant message that are not the last turn seen."""

    def __init__(self) -> None:
        self.seen = 0
        self.last = ""

    def new(self, inputs: list[Message]) -> list[str]:
        said = [(n, m.text) for n, m in enumerate(inputs)
                if m.role in ("user", "human") and m.text]
        if len(said) > self.seen:
            found = [text for _, text in said[self.seen:]]
            self.seen = len(said)
        else:
            last_assistant = max((n for n, m in enumerate(inputs) if m.role == "assistant"),
                                 default=-1)
            found = [text for n, text in said if n > last_assistant and text != self.last]
        if found:
            self.last = found[-1]
        return found


def _root_text(root: Span, output: bool) -> str:
    """What the root span says the user asked (``output``: what the agent answered)."""
    messages = model_messages(root, output)
    role = ("assistant", "model", "ai") if output else ("user", "human")
    texts = [m.text for m in messages if m.role in role and m.text]
    if texts:
        return texts[-1] if output else texts[0]
    value = _json(root.attributes.get("output.value" if output else "input.value"))
    if isinstance(value, dict):
        value = _first(value, "output", "answer", "final_answer", "content") if output \
            else _first(value, "task", "input", "query", "question", "content")
    return _text(value) if value is not None else ""
