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

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fbi.trajectories._model import ToolCall, TrajectoryError

_MODEL_CALLS = {"chat", "text_completion", "generate_content", "completion"}
_AGENTS = {"invoke_agent", "create_agent"}


# ------------------------------------------------------------------ spans


@dataclass
class Span:
    """One span, its attributes flattened to dotted keys (``llm.input_messages.0.
    message.role``)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: float | None
    """Seconds since the epoch."""
    end: float | None
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: bool = False
    status_message: str = ""

    @property
    def kind(self) -> str:
        """``model``, ``tool``, ``agent`` or ``other``."""
        operation = str(self.attributes.get("gen_ai.operation.name", "")).lower()
        openinference = str(self.attributes.get("openinference.span.kind", "")).upper()
        if operation in _MODEL_CALLS or openinference == "LLM":
            return "model"
        if operation == "execute_tool" or openinference == "TOOL":
            return "tool"
        if operation in _AGENTS or openinference == "AGENT":
            return "agent"
        return "other"

    def label(self) -> str:
        return f"span {self.span_id!r} ({self.name})" if self.name else f"span {self.span_id!r}"


def is_trace_record(record: Any) -> bool:
    """Whether a record is OTLP JSON, a span or a trace of spans, not a trajectory."""
    if not isinstance(record, dict):
        return False
    if "resourceSpans" in record:
        return True
    if isinstance(record.get("spans"), list) and "steps" not in record:
        return True
    flat = _flatten(record, depth=2)
    return any(k in flat for k in ("context.span_id", "span_id", "spanId"))


def spans_of(record: dict, where: str) -> list[Span]:
    """Every span of one record (see the module docstring)."""
    if "resourceSpans" in record:
        found = []
        for resource in _list(record, "resourceSpans", where):
            described = _flatten(_key_values((resource.get("resource") or {}).get(
                "attributes")))  # (the service that emitted them: service.name, …)
            for scope in _list(resource, "scopeSpans", where):
                for span in _list(scope, "spans", where):
                    made = _otlp_span(span, where)
                    made.attributes = {**described, **made.attributes}
                    found.append(made)
        return found
    if isinstance(record.get("spans"), list) and "steps" not in record:
        return [s for span in record["spans"] for s in _span_records(span, None, where)]
    return _span_records(record, None, where)


def _list(holder: Any, name: str, where: str) -> list:
    value = holder.get(name, []) if isinstance(holder, dict) else None
    if not isinstance(value, list):
        raise TrajectoryError(where, None, f"its {name} is not a list", "give OTLP JSON as "
                              "an OpenTelemetry exporter writes it")
    return value


def _any_value(value: Any) -> Any:
    """OTLP JSON's AnyValue as a Python value."""
    if not isinstance(value, dict):
        return value
    for kind in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if kind in value:
            return value[kind]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [_any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {kv.get("key"): _any_value(kv.get("value"))
                for kv in (value["kvlistValue"] or {}).get("values", [])
                if isinstance(kv, dict)}
    return None


def _key_values(items: Any) -> dict[str, Any]:
    if isinstance(items, dict):
        return items
    return {kv["key"]: _any_value(kv.get("value")) for kv in items or ()
            if isinstance(kv, dict) and isinstance(kv.get("key"), str)}


def _flatten(value: Any, prefix: str = "", depth: int = 64) -> dict[str, Any]:
    """Nested objects and lists as dotted keys (``a.0.b``); a scalar stays as it is."""
    out: dict[str, Any] = {}
    if depth and isinstance(value, dict):
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}{key}.", depth - 1))
    elif depth and isinstance(value, list) and value and \
            all(isinstance(v, dict) for v in value):
        for index, inner in enumerate(value):
            out.update(_flatten(inner, f"{prefix}{index}.", depth - 1))
    elif prefix:
        out[prefix[:-1]] = value
    return out


def _seconds(value: Any) -> float | None:
    """A time: nanoseconds since the epoch (a number or its digits), or ISO 8601."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value / 1e9 if value > 1e12 else float(value)
    if isinstance(value, str):
        if value.isdigit():
            return int(value) / 1e9
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _otlp_span(span: Any, where: str) -> Span:
    if not isinstance(span, dict):
        raise TrajectoryError(where, None, "a span is not an object", "give OTLP JSON")
    status = span.get("status") or {}
    code = status.get("code") if isinstance(status, dict) else None
    return Span(
        trace_id=str(span.get("traceId") or ""), span_id=str(span.get("spanId") or ""),
        parent_id=str(span["parentSpanId"]) if span.get("parentSpanId") else None,
        name=str(span.get("name") or ""), start=_seconds(span.get("startTimeUnixNano")),
        end=_seconds(span.get("endTimeUnixNano")),
        attributes=_flatten(_key_values(span.get("attributes"))),
        events=[(str(e.get("name", "")), _flatten(_key_values(e.get("attributes"))))
                for e in span.get("events") or () if isinstance(e, dict)],
        error=code in (2, "2", "STATUS_CODE_ERROR", "ERROR"),
        status_message=str(status.get("message") or "") if isinstance(status, dict) else "")


def _first(flat: dict[str, Any], *names: str) -> Any:
    return next((flat[n] for n in names if flat.get(n) not in (None, "")), None)


def _span_records(record: Any, parent: str | None, where: str) -> list[Span]:
    """A span record (Phoenix's, a dataframe row, a TRAIL-like nesting) and the child
    spans nested in it."""
    if not isinstance(record, dict):
        raise TrajectoryError(where, None, "a span is not an object", "one object a span")
    children = [c for name in ("child_spans", "children") for c in record.get(name) or ()]
    rest = {k: v for k, v in record.items() if k not in ("child_spans", "children")}
    flat = _flatten(rest, depth=2)  # (the attributes are flattened whole below)
    attributes: dict[str, Any] = {}
    for name in ("attributes", "span_attributes"):
        if isinstance(rest.get(name), dict):
            attributes.update(_flatten(rest[name]))
        elif isinstance(rest.get(name), str):  # a JSON string of them
            try:
                attributes.update(_flatten(json.loads(rest[name])))
            except ValueError:
                raise TrajectoryError(where, None, f"the {name} of span "
                                      f"{record.get('span_id', '?')!r} are a string that "
                                      "is not JSON", f"give the {name} as an object") \
                    from None
    for key, value in _flatten(rest).items():  # a dataframe's ``attributes.…`` columns
        for prefix in ("attributes.", "span_attributes."):
            if key.startswith(prefix) and key[len(prefix):] not in attributes:
                attributes[key[len(prefix):]] = value
    status = str(_first(flat, "status_code", "status.status_code", "status.code") or "")
    span_id = str(_first(flat, "context.span_id", "span_id", "spanId") or "")
    parent_id = _first(flat, "parent_id", "parent_span_id", "parentSpanId") or parent
    start = _seconds(_first(flat, "start_time", "startTimeUnixNano", "timestamp"))
    end = _seconds(_first(flat, "end_time", "endTimeUnixNano"))
    duration = _first(flat, "duration")
    if end is None and start is not None and isinstance(duration, int | float):
        end = start + (duration / 1e9 if duration > 1e6 else duration)
    span = Span(
        trace_id=str(_first(flat, "context.trace_id", "trace_id", "traceId") or ""),
        span_id=span_id, parent_id=str(parent_id) if parent_id else None,
        name=str(_first(flat, "name", "span_name") or ""), start=start, end=end,
        attributes=attributes,
        events=[(str(e.get("name", "")), _flatten(_key_values(e.get("attributes"))))
                for e in rest.get("events") or () if isinstance(e, dict)],
        error=status.upper() in ("ERROR", "STATUS_CODE_ERROR", "2"),
        status_message=str(_first(flat, "status_message", "status.message") or ""))
    return [span] + [s for child in children for s in _span_records(child, span_id, where)]


# ------------------------------------------------------------------ messages


@dataclass
class Message:
    role: str
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    call_id: str | None = None  # a tool message: the call it answers


def _json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _arguments(value: Any) -> dict:
    value = _json(value)
    if isinstance(value, dict):
        return value
    return {} if value in (None, "") else {"input": value}


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) or (isinstance(v, dict) and
                                       ("text" in v or "content" in v)) for v in value):
        return "\n".join(_text(v.get("text", v.get("content")) if isinstance(v, dict)
                               else v) for v in value)  # (text parts)
    return json.dumps(value, ensure_ascii=False)


def _indexed(flat: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` keys grouped by N, in N's order, each with its ``rest`` keys."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in flat.items():
        if key.startswith(prefix):
            head, _, rest = key[len(prefix):].partition(".")
            if head.isdigit():
                groups.setdefault(int(head), {})[rest] = value
    return [groups[n] for n in sorted(groups)]


def _semconv_messages(value: Any) -> list[Message]:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages``: role and parts."""
    value = _json(value)
    messages = []
    for item in value if isinstance(value, list) else ():
        if not isinstance(item, dict):
            continue
        message = Message(str(item.get("role") or "assistant"))
        texts = []
        for part in item.get("parts") or ():
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(_text(part.get("content")))
            elif kind == "tool_call":
                message.calls.append(ToolCall(id=str(part.get("id") or f"call-{id(part)}"),
                                              name=str(part.get("name") or "?"),
                                              arguments=_arguments(part.get("arguments"))))
            elif kind == "tool_call_response":
                message.call_id = str(part.get("id") or "")
                texts.append(_text(part.get("response")))
        if "content" in item and not texts:  # (a chat-style message)
            texts.append(_text(item.get("content")))
        for call in item.get("tool_calls") or ():  # (OpenAI's, in a chat-style message)
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                message.calls.append(ToolCall(
                    id=str(call.get("id") or f"call-{len(messages)}-{len(message.calls)}"),
                    name=str(function.get("name") or "?"),
                    arguments=_arguments(function.get("arguments"))))
        if item.get("tool_call_id"):
            message.call_id = str(item["tool_call_id"])
        message.text = "\n".join(t for t in texts if t)
        messages.append(message)
    return messages


def _flat_messages(flat: dict[str, Any], prefix: str) -> list[Message]:
    """OpenInference's ``llm.input_messages.N.message.*`` and the older GenAI
    ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``."""
    messages = []
    for group in _indexed(flat, prefix):
        def get(name: str, group: dict = group) -> Any:
            return group.get(f"message.{name}", group.get(name))
        text = get("content")
        if text is None:
            parts = _indexed({k.removeprefix("message."): v for k, v in group.items()},
                             "contents.")
            text = "\n".join(_text(p.get("message_content.text")) for p in parts
                             if p.get("message_content.text"))
        message = Message(str(get("role") or "assistant"), _text(text))
        calls_prefix = "message.tool_calls." if any(k.startswith("message.tool_calls.")
                                                    for k in group) else "tool_calls."
        for call in _indexed(group, calls_prefix):
            ident = call.get("tool_call.id", call.get("id"))
            name = call.get("tool_call.function.name", call.get("name"))
            arguments = call.get("tool_call.function.arguments", call.get("arguments"))
            message.calls.append(ToolCall(id=str(ident or f"call-{len(messages)}-"
                                                 f"{len(message.calls)}"),
                                          name=str(name or "?"),
                                          arguments=_arguments(arguments)))
        tool_call_id = get("tool_call_id")
        message.call_id = str(tool_call_id) if tool_call_id else None
        messages.append(message)
    return messages


def _event_messages(span: Span, output: bool) -> list[Message]:
    """The GenAI conventions' message events: one a message (``gen_ai.user.message``, …,
    ``gen_ai.choice``), or the older ``gen_ai.content.prompt`` /
    ``gen_ai.content.completion`` holding them all (``gen_ai.prompt``,
    ``gen_ai.completion``: chat messages as JSON)."""
    messages = []
    whole = "gen_ai.content.completion" if output else "gen_ai.content.prompt"
    for name, attributes in span.events:
        if name == whole:
            messages += _semconv_messages(attributes.get(
                "gen_ai.completion" if output else "gen_ai.prompt"))
            continue
        if name.startswith("gen_ai.content."):
            continue
        if not name.startswith("gen_ai.") or (name == "gen_ai.choice") != output:
            continue
        role = name.removeprefix("gen_ai.").removesuffix(".message")
        body = dict(attributes)
        for key in ("body", "gen_ai.event.content", "message"):  # the event's body, as
            inner = _json(body.pop(key, None))                   # JSON in an attribute
            if isinstance(inner, dict):
                body.update(_flatten(inner))
        body = {k.removeprefix("message."): v for k, v in body.items()}
        content = body.get("content")
        message = Message("assistant" if role == "choice" else role, _text(content))
        for call in _indexed(body, "tool_calls."):
            message.calls.append(ToolCall(
                id=str(call.get("id") or f"call-{len(message.calls)}"),
                name=str(call.get("function.name") or call.get("name") or "?"),
                arguments=_arguments(call.get("function.arguments",
                                              call.get("arguments")))))
        if role == "tool":
            message.call_id = str(body.get("id") or body.get("tool_call_id") or "")
        messages.append(message)
    return messages


def model_messages(span: Span, output: bool) -> list[Message]:
    """A model call's input (or output) messages, by whichever convention holds them."""
    flat = span.attributes
    semconv = flat.get("gen_ai.output.messages" if output else "gen_ai.input.messages")
    if semconv is not None:
        return _semconv_messages(semconv)
    for prefix in (("llm.output_messages.", "gen_ai.completion.") if output else
                   ("llm.input_messages.", "gen_ai.prompt.")):
        found = _flat_messages(flat, prefix)
        if found:
            return found
    return _event_messages(span, output)


def _tools_offered(span: Span) -> list[dict]:
    """Tool definitions a model call was offered (``gen_ai.tool.definitions``,
    ``llm.tools.N.tool.json_schema``)."""
    found = _json(span.attributes.get("gen_ai.tool.definitions"))
    definitions = list(found) if isinstance(found, list) else []
    for group in _indexed(span.attributes, "llm.tools."):
        schema = _json(group.get("tool.json_schema"))
        if isinstance(schema, dict):
            definitions.append(schema)
    return [d for d in definitions if isinstance(d, dict)]


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
