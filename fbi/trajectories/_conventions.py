"""What a model call's span says, by the conventions that name it (issue 66): its input
and output messages — OpenTelemetry GenAI's ``gen_ai.input.messages`` /
``gen_ai.output.messages`` parts, the older indexed ``gen_ai.prompt.N.*`` /
``gen_ai.completion.N.*`` attributes and message events, OpenInference's
``llm.input_messages.N.message.*`` — and the tools it was offered. Read by
`fbi.trajectories._traces`, which turns spans into steps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fbi.trajectories._model import ToolCall
from fbi.trajectories._spans import Span, _flatten


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


